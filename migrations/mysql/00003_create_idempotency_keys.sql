-- +goose Up
-- Idempotency records of POST /v1/pets: one per API key (key_id) and Idempotency-Key header
-- (idem_key, printable ASCII compared byte for byte: VARBINARY keeps keys case-sensitive and,
-- unlike PAD SPACE collations such as ascii_bin, tells "abc" from "abc "). request_hash is the
-- hex SHA-256 fingerprint of the request (method, route, body bytes). A row is in_flight while
-- a request holds its lease (lease_token, until locked_until), then done with the answer to
-- replay (status, headers as a JSON object, body). Times are UTC. Rows are ignored from
-- expires_at on and purged in batches along idx_idempotency_keys_expires_at.
CREATE TABLE idempotency_keys (
  key_id       BIGINT         NOT NULL,
  idem_key     VARBINARY(255) NOT NULL,
  request_hash CHAR(64)       CHARACTER SET ascii NOT NULL,
  state        VARCHAR(16)    NOT NULL,
  lease_token  CHAR(32)       CHARACTER SET ascii NOT NULL,
  status       INT            NOT NULL DEFAULT 0,
  headers      TEXT           NOT NULL,
  body         MEDIUMBLOB     NOT NULL,
  created_at   DATETIME(6)    NOT NULL,
  expires_at   DATETIME(6)    NOT NULL,
  locked_until DATETIME(6)    NOT NULL,
  PRIMARY KEY (key_id, idem_key),
  KEY idx_idempotency_keys_expires_at (expires_at),
  CONSTRAINT chk_idempotency_keys_state CHECK (state IN ('in_flight', 'done'))
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

-- +goose Down
DROP TABLE idempotency_keys;
