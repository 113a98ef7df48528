-- +goose Up
-- Idempotency records of POST /v1/pets: one per API key (key_id) and Idempotency-Key header
-- (idem_key, printable ASCII; TEXT compares with the BINARY collation, so keys are
-- case-sensitive). request_hash is the hex SHA-256 fingerprint of the request (method, route,
-- body bytes). A row is in_flight while a request holds its lease (lease_token, until
-- locked_until), then done with the answer to replay (status, headers as a JSON object, body).
-- Times are UTC. Rows are ignored from expires_at on and purged in batches along
-- idx_idempotency_keys_expires_at.
CREATE TABLE idempotency_keys (
  key_id       INTEGER  NOT NULL,
  idem_key     TEXT     NOT NULL,
  request_hash TEXT     NOT NULL,
  state        TEXT     NOT NULL CHECK (state IN ('in_flight', 'done')),
  lease_token  TEXT     NOT NULL,
  status       INTEGER  NOT NULL DEFAULT 0,
  headers      TEXT     NOT NULL DEFAULT '',
  body         BLOB     NOT NULL DEFAULT x'',
  created_at   DATETIME NOT NULL,
  expires_at   DATETIME NOT NULL,
  locked_until DATETIME NOT NULL,
  PRIMARY KEY (key_id, idem_key)
);
CREATE INDEX idx_idempotency_keys_expires_at ON idempotency_keys (expires_at);

-- +goose Down
DROP TABLE idempotency_keys;
