// graphql-codegen's client preset with persisted documents: it writes
// $TRUSTED_DOCS_OUT/gql/persisted-documents.json ({"<hash>": "<document>"}), which
// `petstore documents add` takes.
const out = process.env.TRUSTED_DOCS_OUT || 'out';

module.exports = {
  schema: '../../graph/schema.graphqls',
  documents: ['src/**/*.js'],
  ignoreNoDocuments: false,
  generates: {
    [`${out}/gql/`]: {
      preset: 'client',
      presetConfig: { persistedDocuments: true },
    },
  },
};
