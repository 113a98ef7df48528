-- +goose Up
-- Trusted documents (`petstore documents add`): GraphQL documents that apps registered, each
-- under its id; sha256 is the hex SHA-256 of body, by which a document sent as text is known;
-- cost is what the document's costliest operation is charged, worked out when it was added.
-- seq only grows: instances compare COUNT(*) and MAX(seq) to know the list changed.
CREATE TABLE documents (
  seq        INTEGER PRIMARY KEY AUTOINCREMENT,
  id         TEXT     NOT NULL UNIQUE,
  sha256     TEXT     NOT NULL,
  body       TEXT     NOT NULL,
  name       TEXT     NOT NULL DEFAULT '',
  type       TEXT     NOT NULL DEFAULT '',
  cost       INTEGER  NOT NULL,
  added_at   DATETIME NOT NULL
);
CREATE INDEX ix_documents_sha256 ON documents (sha256);

-- +goose Down
DROP TABLE documents;
