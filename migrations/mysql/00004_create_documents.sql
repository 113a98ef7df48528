-- +goose Up
-- Trusted documents (`petstore documents add`): GraphQL documents that apps registered, each
-- under its id; sha256 is the hex SHA-256 of body, by which a document sent as text is known;
-- cost is what the document's costliest operation is charged, worked out when it was added.
-- seq only grows: instances compare COUNT(*) and MAX(seq) to know the list changed.
CREATE TABLE documents (
  seq        BIGINT       NOT NULL AUTO_INCREMENT,
  id         VARCHAR(255) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  sha256     CHAR(64)     CHARACTER SET ascii NOT NULL,
  body       MEDIUMTEXT   NOT NULL,
  name       VARCHAR(255) NOT NULL DEFAULT '',
  type       VARCHAR(16)  NOT NULL DEFAULT '',
  cost       INT          NOT NULL,
  added_at   DATETIME(6)  NOT NULL,
  PRIMARY KEY (seq),
  UNIQUE KEY uq_documents_id (id),
  KEY ix_documents_sha256 (sha256)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

-- +goose Down
DROP TABLE documents;
