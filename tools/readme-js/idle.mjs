// idle.mjs opens idle subscriptions with the graphql-ws client, as an operator's load would:
// IDLE_N clients (one WebSocket each) to IDLE_URL, their source addresses spread over
// IDLE_ADDRS loopback addresses (127.0.x.y, from 127.0.1.1) by binding each socket's
// localAddress, the keys of IDLE_KEYS (comma-separated) taken in turn and sent in
// connection_init, each subscribed to petAdded as the README's client subscribes. It prints
// "ready" once every client is connected (acknowledged) and has sent its subscribe, then
// holds them, answering the server's pings, until it is killed. A client that fails or
// closes prints "error: ..." and ends the process with status 1. Run by the e2e tests
// (e2e/subscriptions_idle_node_test.go).
import { createClient } from 'graphql-ws';
import WebSocket from 'ws';

const url = process.env.IDLE_URL;
const n = Number(process.env.IDLE_N);
const addrs = Number(process.env.IDLE_ADDRS || '200');
const keys = (process.env.IDLE_KEYS || '').split(',');
const inFlight = 64; // connections being opened at once

const fail = (what) => {
  console.log(`error: ${what}`);
  process.exit(1);
};

// address returns the i-th source address: 127.0.1.1, 127.0.1.2 ... 127.0.1.250, 127.0.2.1 ...
const address = (i) => `127.0.${1 + Math.floor(i / 250)}.${1 + (i % 250)}`;

// open connects client i and subscribes it; it resolves once the server acknowledged it.
const open = (i) => new Promise((resolve) => {
  const localAddress = address(i % addrs);
  const client = createClient({
    url,
    webSocketImpl: class extends WebSocket {
      constructor(address, protocols) { super(address, protocols, { localAddress }); }
    },
    connectionParams: { Authorization: `Bearer ${keys[i % keys.length]}` },
    lazy: false,
    retryAttempts: 0,
    on: {
      connected: () => resolve(),
      closed: (event) => fail(`client ${i} (${localAddress}) closed: ${event.code} ${event.reason}`),
      error: (err) => fail(`client ${i} (${localAddress}): ${err.message || err}`),
    },
  });
  const request = { query: 'subscription($after: String) { petAdded(after: $after) { cursor pet { id name } } }', variables: {} };
  client.subscribe(request, {
    next: () => {},
    error: (err) => fail(`subscription ${i}: ${JSON.stringify(err)}`),
    complete: () => fail(`subscription ${i} completed`),
  });
});

let next = 0;
const worker = async () => {
  while (next < n) {
    await open(next++);
  }
};
await Promise.all(Array.from({ length: inFlight }, worker));
console.log('ready'); // the sockets keep the process alive until it is killed
