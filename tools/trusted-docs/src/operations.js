// The operations of a small app: the build tools list them (npm run codegen, npm run
// apollo-manifest) and Apollo Client sends them by id (run.mjs).
import { gql } from '@apollo/client';

export const LIST_PETS = gql`
  query ListPets($limit: Int) {
    pets(limit: $limit) {
      id
      name
      status
    }
  }
`;

export const GET_PET = gql`
  query GetPet($id: ID!) {
    pet(id: $id) {
      id
      name
    }
  }
`;

export const CREATE_PET = gql`
  mutation CreatePet($input: NewPet!) {
    createPet(input: $input) {
      id
      name
    }
  }
`;
