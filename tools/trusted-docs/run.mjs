// Apollo Client with the persisted-query link, its ids generated from Apollo's manifest: each
// operation is sent by id alone (a query with GET, a mutation with POST), as a server under
// PETSTORE_DOCUMENTS=ids requires. It prints one line a step; e2e TestDocumentsFromClientTools
// runs it with PETSTORE_URL (the base, ending in /v1), PETSTORE_KEY and TRUSTED_DOCS_OUT.
import { readFile } from 'node:fs/promises';
import { ApolloClient, HttpLink, InMemoryCache } from '@apollo/client';
import { PersistedQueryLink } from '@apollo/client/link/persisted-queries';
import { generatePersistedQueryIdsFromManifest } from '@apollo/persisted-query-lists';
import { CREATE_PET, GET_PET, LIST_PETS } from './src/operations.js';

const out = process.env.TRUSTED_DOCS_OUT || 'out';
const manifest = JSON.parse(await readFile(`${out}/persisted-query-manifest.json`, 'utf8'));

const sent = [];
const client = new ApolloClient({
  cache: new InMemoryCache(),
  link: new PersistedQueryLink({
    ...generatePersistedQueryIdsFromManifest({ loadManifest: () => Promise.resolve(manifest) }),
    useGETForHashedQueries: true,
  }).concat(
    new HttpLink({
      uri: `${process.env.PETSTORE_URL}/graphql`,
      headers: { Authorization: `Bearer ${process.env.PETSTORE_KEY}` },
      fetch: (url, init) => {
        const text = init.body ? 'query' in JSON.parse(init.body) : new URL(url).searchParams.has('query');
        sent.push(`${init.method} ${text ? 'with' : 'without'} text`);
        return fetch(url, init);
      },
    }),
  ),
});

const created = await client.mutate({ mutation: CREATE_PET, variables: { input: { name: 'Trusted', categoryId: '1' } } });
console.log(`created ${created.data.createPet.name}`);
const pet = await client.query({ query: GET_PET, variables: { id: created.data.createPet.id } });
console.log(`got ${pet.data.pet.name}`);
const list = await client.query({ query: LIST_PETS, variables: { limit: 5 } });
console.log(`listed ${list.data.pets.length}`);
for (const s of sent) console.log(`sent ${s}`);
