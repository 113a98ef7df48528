-- +goose Up
-- Webhooks: see the MySQL migration of the same number for what each column holds.
CREATE TABLE webhook_endpoints (
  id               TEXT    PRIMARY KEY,
  key_id           INTEGER NOT NULL,
  url              TEXT    NOT NULL,
  events           TEXT    NOT NULL,
  secret           TEXT    NOT NULL,
  old_secret       TEXT    NULL,
  old_secret_until DATETIME NULL,
  created_at       DATETIME NOT NULL,
  failing_since    DATETIME NULL,
  disabled_at      DATETIME NULL,
  after_id         INTEGER NOT NULL DEFAULT 0,
  catch_up_at      DATETIME NULL
);
CREATE INDEX idx_webhook_endpoints_key_id ON webhook_endpoints (key_id, created_at);

CREATE TABLE webhook_outbox (
  id         INTEGER PRIMARY KEY AUTOINCREMENT,
  pet_id     INTEGER NOT NULL,
  created_at DATETIME NOT NULL
);

CREATE TABLE webhook_deliveries (
  id              TEXT    PRIMARY KEY,
  endpoint_id     TEXT    NOT NULL,
  event_type      TEXT    NOT NULL,
  pet_id          INTEGER NOT NULL,
  event_at        DATETIME NOT NULL,
  status          TEXT    NOT NULL CHECK (status IN ('pending', 'delivered', 'failed')),
  attempts        INTEGER NOT NULL DEFAULT 0,
  last_status     INTEGER NULL,
  last_error      TEXT    NOT NULL DEFAULT '',
  next_attempt_at DATETIME NULL,
  created_at      DATETIME NOT NULL
);
CREATE INDEX idx_webhook_deliveries_due ON webhook_deliveries (status, next_attempt_at);
CREATE INDEX idx_webhook_deliveries_endpoint ON webhook_deliveries (endpoint_id, created_at);

-- +goose Down
DROP TABLE webhook_deliveries;
DROP TABLE webhook_outbox;
DROP TABLE webhook_endpoints;
