-- +goose Up
-- API keys: only the hex SHA-256 of each key is stored; hint is the prefix and first random
-- characters, enough for a person to recognise a key in a list.
CREATE TABLE api_keys (
  id         INTEGER PRIMARY KEY AUTOINCREMENT,
  name       TEXT     NOT NULL DEFAULT '',
  hint       TEXT     NOT NULL,
  hash       TEXT     NOT NULL UNIQUE,
  plan       TEXT     NOT NULL,
  per_minute INTEGER  NULL,
  per_day    INTEGER  NULL,
  created_at DATETIME NOT NULL,
  revoked_at DATETIME NULL
);

-- +goose Down
DROP TABLE api_keys;
