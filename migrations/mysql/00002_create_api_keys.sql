-- +goose Up
-- API keys: only the hex SHA-256 of each key is stored; hint is the prefix and first random
-- characters, enough for a person to recognise a key in a list.
CREATE TABLE api_keys (
  id         BIGINT       NOT NULL AUTO_INCREMENT,
  name       VARCHAR(255) NOT NULL DEFAULT '',
  hint       VARCHAR(64)  NOT NULL,
  hash       CHAR(64) CHARACTER SET ascii NOT NULL,
  plan       VARCHAR(16)  NOT NULL,
  per_minute BIGINT       NULL,
  per_day    BIGINT       NULL,
  created_at DATETIME(6)  NOT NULL,
  revoked_at DATETIME(6)  NULL,
  PRIMARY KEY (id),
  UNIQUE KEY uq_api_keys_hash (hash)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

-- +goose Down
DROP TABLE api_keys;
