// Apollo's generate-persisted-query-manifest: it writes $TRUSTED_DOCS_OUT/persisted-query-manifest.json,
// which `petstore documents add` takes, with the documents as Apollo Client sends them
// (__typename added).
const out = process.env.TRUSTED_DOCS_OUT || 'out';

module.exports = {
  documents: ['src/**/*.js'],
  output: `${out}/persisted-query-manifest.json`,
};
