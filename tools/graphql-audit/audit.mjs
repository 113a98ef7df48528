// audit.mjs runs the graphql-http server audits (GraphQL-over-HTTP spec conformance) against a
// running pet store. AUDIT_URL is the GraphQL endpoint (http://127.0.0.1:8080/v1/graphql) and
// AUDIT_KEY an API key, sent as "Authorization: Bearer <key>" on every audit request.
//
// It prints one line per audit (ok, notice, warn or error, with its id and name, and the reason
// for anything but ok), then "audit: N passed, N failed" where passed counts ok and failed counts
// warn and error. It exits 1 on any warning or error, 2 when it cannot run at all. Notices are
// the spec's optional (MAY) points: printed and counted apart, they do not fail the run.
import { serverAudits } from 'graphql-http';

const url = process.env.AUDIT_URL;
const key = process.env.AUDIT_KEY;
if (!url || !key) {
  console.error('audit: set AUDIT_URL (the GraphQL endpoint) and AUDIT_KEY (an API key)');
  process.exit(2);
}

// fetchFn adds the API key to every request the audits make, keeping their own headers.
function fetchFn(input, init = {}) {
  const headers = new Headers(init.headers);
  headers.set('authorization', `Bearer ${key}`);
  return fetch(input, { ...init, headers });
}

// describe returns the failure reason with the answer's status and the start of its body.
async function describe(result) {
  let body = '';
  try {
    body = (await result.response.clone().text()).slice(0, 300);
  } catch {
    // The audit consumed the body already; the reason says enough.
  }
  return `${result.reason} (got ${result.response.status} ${body})`;
}

const counts = { ok: 0, notice: 0, warn: 0, error: 0 };
for (const { id, name, fn } of serverAudits({ url, fetchFn })) {
  const result = await fn();
  counts[result.status]++;
  const line = `${result.status.padEnd(6)} ${id} ${name}`;
  console.log(result.status === 'ok' ? line : `${line}: ${await describe(result)}`);
}
if (counts.notice > 0) {
  console.log(`audit: ${counts.notice} optional (MAY) points not followed`);
}
console.log(`audit: ${counts.ok} passed, ${counts.warn + counts.error} failed`);
process.exit(counts.warn + counts.error > 0 ? 1 : 0);
