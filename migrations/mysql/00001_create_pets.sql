-- +goose Up
-- Pets. utf8mb4 with a binary collation stores and returns names exactly as sent. The
-- (status, id) index serves the status-filtered listing in id order; the primary key serves
-- the unfiltered one.
CREATE TABLE pets (
  id          BIGINT       NOT NULL AUTO_INCREMENT,
  name        VARCHAR(255) NOT NULL,
  category_id BIGINT       NOT NULL,
  status      VARCHAR(16)  NULL,
  PRIMARY KEY (id),
  KEY idx_pets_status_id (status, id),
  CONSTRAINT chk_pets_status CHECK (status IN ('available', 'pending', 'sold'))
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

-- +goose Down
DROP TABLE pets;
