-- The pet store's two database users, for a database named petstore (MariaDB or MySQL), with
-- the least each needs:
--   petstore_migrate  runs `petstore migrate up|down|status`: it creates, alters and drops the
--                     service's tables (and reads and writes goose's version table and the
--                     migrations' lease on Galera);
--   petstore          runs `petstore serve`, `petstore keys` and `petstore documents`: it
--                     reads and writes rows of those tables (documents included) and never
--                     changes the schema.
-- Change both passwords before you run it, as root or another user that may grant them:
--   mariadb -uroot < deploy/mysql/grants.sql
-- '%' lets each user in from any host: narrow it to where the service runs (a subnet such as
-- '10.1.%', or a host name), in its CREATE USER and its GRANT alike. See docs/operations.md.

CREATE DATABASE IF NOT EXISTS `petstore` CHARACTER SET utf8mb4 COLLATE utf8mb4_bin;

CREATE USER 'petstore_migrate'@'%' IDENTIFIED BY 'CHANGE-ME-migrate';
GRANT SELECT, INSERT, UPDATE, DELETE, CREATE, ALTER, DROP, INDEX ON `petstore`.* TO 'petstore_migrate'@'%';

CREATE USER 'petstore'@'%' IDENTIFIED BY 'CHANGE-ME-serve';
GRANT SELECT, INSERT, UPDATE, DELETE ON `petstore`.* TO 'petstore'@'%';
