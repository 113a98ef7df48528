-- +goose Up
-- Webhooks (package webhooks). webhook_endpoints: the receivers each API key (key_id)
-- registered; secret is the signing secret (whsec_…, kept in clear: every delivery is signed
-- with it), old_secret the one a rotation replaced, still signing until old_secret_until;
-- failing_since is when its deliveries began to fail without a success since, disabled_at
-- when it failed for the whole retry schedule and was disabled. It gets the pets above
-- after_id, the highest id when it was registered or enabled; catch_up_at is when its
-- warm-up ends, to queue the pets written without an outbox row meanwhile (NULL once done).
CREATE TABLE webhook_endpoints (
  id               VARCHAR(40)   CHARACTER SET ascii NOT NULL,
  key_id           BIGINT        NOT NULL,
  url              VARCHAR(2048) NOT NULL,
  events           VARCHAR(255)  NOT NULL,
  secret           VARCHAR(100)  CHARACTER SET ascii NOT NULL,
  old_secret       VARCHAR(100)  CHARACTER SET ascii NULL,
  old_secret_until DATETIME(6)   NULL,
  created_at       DATETIME(6)   NOT NULL,
  failing_since    DATETIME(6)   NULL,
  disabled_at      DATETIME(6)   NULL,
  after_id         BIGINT        NOT NULL DEFAULT 0,
  catch_up_at      DATETIME(6)   NULL,
  PRIMARY KEY (id),
  KEY idx_webhook_endpoints_key_id (key_id, created_at)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

-- The outbox: one row per pet added while an endpoint exists (webhooks.Active), written in
-- the pet's own transaction, turned into one delivery per subscribed endpoint and deleted
-- (webhooks.Dispatcher).
CREATE TABLE webhook_outbox (
  id         BIGINT      NOT NULL AUTO_INCREMENT,
  pet_id     BIGINT      NOT NULL,
  created_at DATETIME(6) NOT NULL,
  PRIMARY KEY (id)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

-- Deliveries: one per event and endpoint; id is the webhook-id header. A pending delivery is
-- due from next_attempt_at; an instance claims it by moving next_attempt_at past its attempt.
CREATE TABLE webhook_deliveries (
  id              VARCHAR(40)  CHARACTER SET ascii NOT NULL,
  endpoint_id     VARCHAR(40)  CHARACTER SET ascii NOT NULL,
  event_type      VARCHAR(32)  NOT NULL,
  pet_id          BIGINT       NOT NULL,
  event_at        DATETIME(6)  NOT NULL,
  status          VARCHAR(16)  NOT NULL,
  attempts        INT          NOT NULL DEFAULT 0,
  last_status     INT          NULL,
  last_error      VARCHAR(255) NOT NULL DEFAULT '',
  next_attempt_at DATETIME(6)  NULL,
  created_at      DATETIME(6)  NOT NULL,
  PRIMARY KEY (id),
  KEY idx_webhook_deliveries_due (status, next_attempt_at),
  KEY idx_webhook_deliveries_endpoint (endpoint_id, created_at),
  CONSTRAINT chk_webhook_deliveries_status CHECK (status IN ('pending', 'delivered', 'failed'))
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

-- +goose Down
DROP TABLE webhook_deliveries;
DROP TABLE webhook_outbox;
DROP TABLE webhook_endpoints;
