-- +goose Up
-- Pets. AUTOINCREMENT never reuses an id. The (status, id) index serves the status-filtered
-- listing in id order; the rowid serves the unfiltered one.
CREATE TABLE pets (
  id          INTEGER PRIMARY KEY AUTOINCREMENT,
  name        TEXT    NOT NULL,
  category_id INTEGER NOT NULL,
  status      TEXT    NULL CHECK (status IN ('available', 'pending', 'sold'))
);
CREATE INDEX idx_pets_status_id ON pets (status, id);

-- +goose Down
DROP TABLE pets;
