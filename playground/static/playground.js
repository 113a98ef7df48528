// playground.js mounts GraphiQL on the page served by the playground package. Every request it
// makes goes to the page's GraphQL endpoint (data-endpoint on #graphiql) with the key typed into
// the key field sent as "Authorization: Bearer <key>". The key is kept in sessionStorage only:
// it survives a reload of the tab and is gone when the tab closes.
//
// The editors start from the URL's query, variables and operationName parameters when present
// (?query={pets{id}}), else from GraphiQL's saved state, else from the default query below.
(function () {
  'use strict';

  var STORAGE_KEY = 'petstore.playground.apiKey';
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

  // makeFetcher returns a GraphiQL fetcher that reads the key field at each request. A fresh one
  // is made whenever the key changes: GraphiQL then fetches the schema again, with the new key.
  function makeFetcher() {
    return async function fetcher(graphQLParams, opts) {
      var extra = (opts && opts.headers) || {};
      var key = keyField.value.trim();
      if (!key && !hasHeader(extra, 'authorization')) {
        return {errors: [{message: 'Enter your API key in the field at the top of the page: ' +
          'every request needs "Authorization: Bearer <key>".'}]};
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

  var root = ReactDOM.createRoot(mount);
  var fetcher = makeFetcher();

  function render() {
    root.render(React.createElement(GraphiQL, {
      fetcher: fetcher,
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
})();
