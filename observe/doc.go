// Package observe is what an operator sees of the service: Prometheus metrics at /metrics and
// one JSON log line per request, both keyed by a request ID that the client sees too.
//
// # Middleware order
//
// Install RequestLog.Middleware and Metrics.Middleware first, before gin's recovery, so that
// they see every request, including the 500 that recovery writes after a panic further in:
//
//	r.Use(requestLog.Middleware, metrics.Middleware)
//	r.Use(gin.CustomRecoveryWithWriter(nil, recovered))
//
// Requests that never reach the gin engine (CORS preflights answered by the CORS wrapper, and
// requests the net/http server refuses itself, such as a 431 for a header block over
// http.Server.MaxHeaderBytes) are neither counted nor logged.
//
// # Metrics
//
//	petstore_http_requests_total{route,method,status}             counter
//	petstore_http_request_duration_seconds{route,method,status}   histogram
//	petstore_http_requests_in_flight                              gauge
//	petstore_ratelimit_decisions_total{outcome,plan}              counter
//	petstore_ratelimit_suspensions_total{plan}                    counter
//	petstore_ratelimit_store_errors_total                         counter (RegisterStoreErrors)
//	petstore_webhook_deliveries_queued_total                      counter (package webhooks)
//	petstore_webhook_deliveries_delivered_total                   counter (package webhooks)
//	petstore_webhook_deliveries_retried_total                     counter (package webhooks)
//	petstore_webhook_deliveries_failed_total                      counter (package webhooks)
//	petstore_webhook_deliveries_deferred_total                    counter (package webhooks)
//	petstore_webhook_oldest_undelivered_seconds                   gauge (package webhooks)
//	go_sql_*{db_name="petstore"}                                  pool stats (RegisterDB)
//	go_*, process_*                                               Go runtime and process
//
// Every label value comes from a fixed set, so no client can grow the number of series: route
// is the gin route template (c.FullPath(), such as /v1/pets/:petId), or "unmatched" for a
// request no route matched (404 for unknown paths, 405 for unknown methods); never the raw
// path. method is one of the nine methods of RFC 9110 and RFC 5789, else "OTHER". status is
// the status code written. outcome is allowed, limited or suspended; plan is free, pro,
// business, enterprise, anonymous (no valid key) or other. No label holds a key, a key ID or
// a client address.
//
// The store of the rate limiter does not report when a suspension starts, so
// petstore_ratelimit_suspensions_total counts the requests rejected with key_suspended (the
// one that starts a suspension and each one sent during it).
//
// # Request IDs
//
// A request's X-Request-ID header is kept when it is one value of 1 to 128 characters from
// [A-Za-z0-9._~-]; otherwise (absent, repeated, too long, other characters) the request gets a
// new ID of 32 hexadecimal digits (128 random bits). The ID is set on the response before the
// handlers run, so every answer carries it, errors included, and it is put in the request's
// context (read with RequestID). The service's logger, whose handler is NewJSONLogHandler's
// (NewLogHandler wraps any other handler alike), adds it as request_id to every line logged
// with that context. A client can choose its ID, so IDs are
// not unique across clients: they tie a client's view to the logs, nothing more.
//
// # Request log
//
// RequestLog writes one line per request after the response, with the message "request" and
// the fields method, route, path, status, duration_ms, bytes, request_id, client and, when the
// request carried a valid key, key_id. The path is the escaped URL path without the query
// string (a query may hold secrets or personal data that have no place in logs), cut to 1,024
// bytes. client is the client address the limiter charges too (package clientaddr: the
// immediate peer, or behind a trusted proxy the client it forwards for). No header is logged, so neither the Authorization header nor the key
// ever appears. Levels: debug for /healthz, /readyz and /metrics, whatever their status; error
// for 5xx other than 501 not_implemented; info for the rest.
package observe
