// playground.js mounts GraphiQL on the page served by the playground package. Every request it
// makes goes to the page's GraphQL endpoint (data-endpoint on #graphiql) with the key typed into
// the key field sent as "Authorization: Bearer <key>". The key is kept in sessionStorage only:
// it survives a reload of the tab and is gone when the tab closes. Subscriptions run over a
// WebSocket to the same endpoint (graphql-ws, the graphql-transport-ws protocol), the key sent in
// connection_init's payload, since a browser cannot set headers on a WebSocket; the result pane
// lists a subscription's events, each appended as it comes (the latest MAX_EVENTS).
//
// The schema (docs explorer, completion, validation) is built from the public SDL the server
// serves beside the endpoint (schema.graphql, no key needed), with the graphql-js bundled in
// GraphiQL, so it is there before a key is typed; only when the SDL cannot be had does GraphiQL
// introspect, with the key.
//
// The editors start from the URL's query, variables and operationName parameters when present
// (?query={pets{id}}), else from GraphiQL's saved state, else from the default query below.
(function () {
  'use strict';

  var STORAGE_KEY = 'petstore.playground.apiKey';
  var MAX_EVENTS = 100;
  var DEFAULT_QUERY = [
    '# Paste your API key in the field above, then run this with the ▶ button (Ctrl-Enter).',
    '# The Docs button on the left lists every field; deprecated ones are marked.',
    '{',
    '  pets(limit: 10) {',
    '    id',
    '    name',
    '    categoryId',
    '    status',
    '  }',
    '}',
    ''
  ].join('\n');

  var mount = document.getElementById('graphiql');
  var keyField = document.getElementById('api-key');
  var endpoint = mount.getAttribute('data-endpoint');
  var params = new URLSearchParams(window.location.search);

  // GraphiQL's dialogs add a <style> element (react-remove-scroll); they give it the nonce found
  // in this global, which the page's Content-Security-Policy allows for styles.
  window.__webpack_nonce__ = mount.getAttribute('data-style-nonce');

  function loadKey() {
    try {
      return window.sessionStorage.getItem(STORAGE_KEY) || '';
    } catch (e) {
      return '';
    }
  }

  function saveKey(key) {
    try {
      if (key) {
        window.sessionStorage.setItem(STORAGE_KEY, key);
      } else {
        window.sessionStorage.removeItem(STORAGE_KEY);
      }
    } catch (e) {
      // Storage disabled: the key still works until the page is left.
    }
  }

  function hasHeader(headers, name) {
    return Object.keys(headers || {}).some(function (h) {
      return h.toLowerCase() === name;
    });
  }

  // operationKind returns "query", "mutation" or "subscription": the kind of the operation
  // named name in the document (the first one when name is empty), read off its keyword with
  // comments and strings set aside; "query" for a shorthand { ... }.
  function operationKind(document, name) {
    var src = document.replace(/"""[\s\S]*?"""|"(?:[^"\\\n]|\\.)*"|#[^\n\r]*/g, ' ');
    var re = /(^|[^_0-9A-Za-z$])(query|mutation|subscription)(?![_0-9A-Za-z])\s*([_A-Za-z][_0-9A-Za-z]*)?/g;
    var depth = 0, last = 0, m;
    while ((m = re.exec(src)) !== null) {
      var between = src.slice(last, m.index);
      depth += (between.match(/{/g) || []).length - (between.match(/}/g) || []).length;
      last = m.index;
      if (depth === 0 && (!name || m[3] === name)) {
        return m[2];
      }
    }
    return 'query';
  }

  // socketURL returns the WebSocket address of the endpoint: ws: or wss: as the page's own.
  function socketURL() {
    var u = new URL(endpoint, window.location.href);
    u.protocol = u.protocol === 'https:' ? 'wss:' : 'ws:';
    return u.href;
  }

  // socket carries the subscriptions: opened by the first one, with the key in the field then,
  // and closed once none is left (a later one opens it again, with the key of that moment).
  var socket = graphqlWs.createClient({
    url: socketURL(),
    lazy: true,
    connectionParams: function () {
      return {Authorization: 'Bearer ' + keyField.value.trim()};
    }
  });

  // eventList returns an async iterator over the results of events that yields, at each event,
  // the list of the events so far (the latest MAX_EVENTS), for GraphiQL to show whole. It is
  // not an async generator, whose return() would wait for the next event: GraphiQL's stop
  // button calls return(), which here ends the subscription at once.
  function eventList(events) {
    var seen = [];
    var list = {
      next: function () {
        return events.next().then(function (step) {
          if (step.done) {
            return step;
          }
          seen.push(step.value);
          if (seen.length > MAX_EVENTS) {
            seen.shift();
          }
          return {done: false, value: {events: seen.slice()}};
        });
      },
      return: function () {
        return events.return ? events.return() : Promise.resolve({done: true});
      }
    };
    list[Symbol.asyncIterator] = function () {
      return list;
    };
    return list;
  }

  // makeFetcher returns a GraphiQL fetcher that reads the key field at each request. A fresh one
  // is made whenever the key changes: without the SDL, GraphiQL then introspects again, with
  // the new key.
  function makeFetcher() {
    return async function fetcher(graphQLParams, opts) {
      var extra = (opts && opts.headers) || {};
      var key = keyField.value.trim();
      if (!key && !hasHeader(extra, 'authorization')) {
        return {errors: [{message: 'Enter your API key in the field at the top of the page: ' +
          'every request needs "Authorization: Bearer <key>".'}]};
      }
      if (operationKind(graphQLParams.query || '', graphQLParams.operationName) === 'subscription') {
        return eventList(socket.iterate(graphQLParams)); // until GraphiQL stops it
      }
      var headers = {
        'Accept': 'application/graphql-response+json, application/json',
        'Content-Type': 'application/json'
      };
      if (key) {
        headers.Authorization = 'Bearer ' + key;
      }
      Object.assign(headers, extra);
      var response = await fetch(endpoint, {
        method: 'POST',
        headers: headers,
        body: JSON.stringify(graphQLParams),
        credentials: 'omit'
      });
      var text = await response.text();
      try {
        return JSON.parse(text);
      } catch (e) {
        return {errors: [{message: 'HTTP ' + response.status + ' with a body that is not JSON: ' +
          text.slice(0, 500)}]};
      }
    };
  }

  // loadSchema resolves to the schema built from the SDL beside the endpoint, or to undefined
  // (GraphiQL then introspects) when it cannot be fetched or built.
  function loadSchema() {
    return fetch(endpoint + '/schema.graphql', {credentials: 'omit'})
      .then(function (response) {
        if (!response.ok) {
          throw new Error('HTTP ' + response.status);
        }
        return response.text();
      })
      .then(function (sdl) {
        return GraphiQL.GraphQL.buildSchema(sdl);
      })
      .catch(function (e) {
        console.warn('playground: no schema from ' + endpoint + '/schema.graphql (' + e.message +
          '); GraphiQL introspects with the key instead');
        return undefined;
      });
  }

  var root = ReactDOM.createRoot(mount);
  var fetcher = makeFetcher();
  var schema = null; // none until loadSchema settles

  function render() {
    root.render(React.createElement(GraphiQL, {
      fetcher: fetcher,
      schema: schema,
      defaultQuery: DEFAULT_QUERY,
      query: params.get('query') || undefined,
      variables: params.get('variables') || undefined,
      operationName: params.get('operationName') || undefined,
      inputValueDeprecation: true,
      shouldPersistHeaders: false
    }));
  }

  var timer;
  function keyChanged() {
    clearTimeout(timer);
    timer = setTimeout(function () {
      var key = keyField.value.trim();
      if (key === loadKey()) {
        return;
      }
      saveKey(key);
      fetcher = makeFetcher();
      render();
    }, 400);
  }

  keyField.value = loadKey();
  keyField.addEventListener('input', keyChanged);
  keyField.addEventListener('change', keyChanged);
  render();
  loadSchema().then(function (built) {
    schema = built;
    render();
  });
})();
