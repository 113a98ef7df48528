-- +goose Up
-- See the MySQL migration of the same number.
ALTER TABLE webhook_endpoints ADD COLUMN queued_id INTEGER NOT NULL DEFAULT 0;
UPDATE webhook_endpoints SET queued_id = CASE WHEN catch_up_at IS NULL
  THEN MAX(after_id, (SELECT COALESCE(MAX(id), 0) FROM pets)) ELSE after_id END;
ALTER TABLE webhook_endpoints DROP COLUMN catch_up_at;

-- +goose Down
ALTER TABLE webhook_endpoints ADD COLUMN catch_up_at DATETIME NULL;
ALTER TABLE webhook_endpoints DROP COLUMN queued_id;
