-- +goose Up
-- The webhook dispatcher tails the pets table (webhooks.Dispatcher.fanOut): queued_id is the
-- highest pet id whose delivery to the endpoint is queued, every pet above after_id up to it
-- queued once. webhook_outbox now holds only the pets whose write was slow enough that a
-- settled page may have passed them (store/pets, lateAfter); a pet already in it from
-- before is queued from it. An endpoint still in its warm-up is queued again from its
-- after_id; the deliveries it already has may then come a second time, which at least once
-- allows.
ALTER TABLE webhook_endpoints ADD COLUMN queued_id BIGINT NOT NULL DEFAULT 0;
UPDATE webhook_endpoints SET queued_id = CASE WHEN catch_up_at IS NULL
  THEN GREATEST(after_id, (SELECT COALESCE(MAX(id), 0) FROM pets)) ELSE after_id END;
ALTER TABLE webhook_endpoints DROP COLUMN catch_up_at;

-- +goose Down
ALTER TABLE webhook_endpoints ADD COLUMN catch_up_at DATETIME(6) NULL;
ALTER TABLE webhook_endpoints DROP COLUMN queued_id;
