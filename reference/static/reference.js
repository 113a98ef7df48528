// reference.js mounts Scalar's API reference on the page served by the reference package. It
// reads the OpenAPI document from data-document on #reference and sends "try it" requests to
// this server only: the base of the document's own address (/v1 for /v1/openapi.json), which is
// the one origin the page's Content-Security-Policy lets it reach. The API key is typed into
// the Bearer field of Scalar's Authentication panel and kept in memory only (persistAuth off).
(function () {
  'use strict';

  var mount = document.getElementById('reference');
  var documentURL = new URL(mount.getAttribute('data-document'), window.location.href);
  var base = new URL('.', documentURL).href.replace(/\/$/, '');

  mount.textContent = '';
  window.Scalar.createApiReference('#reference', {
    url: documentURL.href,
    servers: [{ url: base, description: 'This server' }],
    authentication: { preferredSecurityScheme: 'bearerAuth' },
    persistAuth: false,
    // Everything below would reach Scalar's servers or a CDN, which the page must not.
    withDefaultFonts: false,
    telemetry: false,
    showDeveloperTools: 'never',
    agent: { disabled: true },
    mcp: { disabled: true },
    documentDownloadType: 'json',
  });
})();
