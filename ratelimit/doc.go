// Package ratelimit enforces the contract's rate limits: two windows (per minute and per day)
// per API key, a stricter per-address budget for requests without a valid key, and temporary
// suspensions of subjects that keep sending after being told to stop. The state lives in a
// Counters: in the process (NewMemoryCounters, the default) or in Redis (NewRedisCounters), shared by
// every instance. Both stores run the same decision and give the same answers for the same
// sequence of requests at the same clock readings.
//
// # Algorithm: fixed windows aligned to the clock
//
// The minute window of a subject is the current UTC minute [hh:mm:00, hh:mm+1:00); the day
// window is the current UTC day [00:00:00, 24:00:00). Each window has a counter. A request costs
// units: one, but for a GraphQL operation over HTTP or on a WebSocket, which costs what its
// operation costs (Meter, Charge). It is admitted only when every window has room for all of
// them (counter + cost <= limit); it is then charged to every window (each counter + cost). A
// rejected request charges nothing. The check and the charge are one atomic step per subject (a
// mutex-guarded shard in process, one Lua script in Redis), so the limiter never admits more
// than the limit in a window, under any concurrency and across any number of instances. Time comes from one clock: the process clock, or Redis TIME when shared,
// so instances with skewed clocks agree.
//
// Worst-case burst at a window edge: because the windows are fixed, a client may spend a whole
// minute's budget in the last instant of one minute and a whole budget again in the first instant
// of the next: at most 2×PerMinute requests in any 60-second span (120 for the free plan), never
// more than PerMinute within one calendar minute. The same holds for the day window around
// 00:00 UTC (at most 2×PerDay in any 24 hours), and the day window also caps the minute bursts.
//
// # Headers
//
// Every response that passes through Limiter.Middleware or Limiter.Meter carries, for the
// window that binds first (the one with fewer units remaining; on a tie the one that resets
// later):
//
//	X-RateLimit-Limit      the window's limit
//	X-RateLimit-Remaining  units still admitted in that window, this request's already counted
//	X-RateLimit-Reset      Unix seconds at which that window ends and its counter returns to
//	                       zero (the next whole UTC minute, or the next 00:00 UTC)
//	RateLimit-Policy       both windows: "minute";q=60;w=60, "day";q=1000;w=86400
//	RateLimit              the binding window: "minute";r=47;t=13 (t: seconds until its reset)
//
// While a subject is suspended, Remaining is 0 and Reset (and t) is the moment a retry is
// admitted: the end of the suspension, or later if a window is exhausted until then.
// A rejected request gets 429 with Retry-After in whole seconds (at least 1): the time until
// every window without room for its cost has reset, or until the suspension ends, whichever is
// later. A client that waits that long and retries is admitted, unless other traffic of the
// same subject spent the budget meanwhile. An operation costing more than a window's whole
// limit, which no wait would admit, is refused invalid_request instead, charged one unit.
//
// # Suspension
//
// A subject that collects Config.SuspendAfter rate_limited rejections within
// Config.SuspendWindow (counted from the first of them) is suspended: the rejection that reaches
// the threshold and every request during the suspension get 429 key_suspended. The first
// suspension lasts Config.SuspendBase; one that starts within Config.SuspendMemory after the
// previous one ended lasts twice as long as that one, up to Config.SuspendMax. Requests during
// a suspension change nothing, so they do not extend it. Suspensions are per subject (one key
// or one client address) and live in the store, so they are shared through Redis.
//
// # Subjects and client addresses
//
// A request whose context carries an auth.Principal is charged to that key, with the limits of
// its plan. Any other request is charged to its client address, with Config.AnonymousPerMinute
// and Config.AnonymousPerDay, and never touches a key's budget. The client address is the one
// package clientaddr worked out for the request (the immediate peer, or behind a trusted proxy
// the client it forwards for), the same one the request log records. IPv6
// clients are grouped by their /64 prefix (one subscriber usually owns a whole /64), and
// IPv4-mapped IPv6 addresses count as IPv4. An unparsable RemoteAddr falls into one shared
// "unknown" bucket.
//
// Limiter.Gate guards the key table: for a request whose key auth must read from the database
// (auth.Pending), it checks the client address with Counters.Check, which decides as Take does but
// charges nothing when it admits, and answers the address's 429 when the address has no room,
// unless the key is in the instance's set of valid keys (Config.Listed) or the instance's
// over-budget reads (Config.OverBudgetKeyReads) have one left, so that an address over its
// budget reads a key only within those reads, and a valid key behind it is never starved of
// them by guesses.
//
// # Counters failures
//
// When the store fails (Redis unreachable), Config.FailOpen decides: fail open (the default)
// admits the request uncounted, or fail closed answers 503 unavailable with Retry-After: 1.
// Either way the failure is counted (Limiter.StoreErrors) and logged through log/slog, at most
// once per 10 seconds while it lasts, plus one line when the store answers again. The headers
// then describe the full quota, since nothing was counted. Recovery needs no action: go-redis
// reconnects, and the script is run with EVALSHA, falling back to EVAL when a restarted Redis
// answers NOSCRIPT.
//
// # Redis layout
//
// One hash per subject, {<prefix>k:<key id>} or {<prefix>a:<address>} (the braces are a Redis
// Cluster hash tag; one key per script call), with the fields mw/mc and dw/dc (minute and day
// window numbers and counts), rs/rc (start and count of the rejection window), su/sl (end and
// level of the latest suspension). The hash expires when nothing in it matters any more: at the
// end of its day window, of its rejection window or of its suspension memory, whichever is last.
//
// Concurrent decisions share round trips: RedisCounters sends them together, as one pipeline of
// EVALSHA calls, one per subject and policy, each deciding its requests one after the other,
// atomically on its own key (see RedisCounters).
package ratelimit
