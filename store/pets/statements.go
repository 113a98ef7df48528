package pets

import (
	"fmt"
	"time"

	"petstore/migrations"
)

// listStatements are the statements of the listing: keyset pagination on (status, id), so
// that every page costs the same. They are plain SQL on GORM's connection pool (its
// prepared-statement cache, or the request's transaction): on the hottest path of the
// service, GORM's statement building and reflective scan cost more than the query. The first
// page has statements of its own, without the condition on id, which costs the server more
// than it selects.
type listStatements struct{ all, byStatus, first, firstByStatus string }

// newListStatements returns the listing statements of dialect, whose statements take at most
// timeout. On SQLite, whose one connection runs one statement at a time, every write has
// committed before a page is read.
//
// On MySQL a page is a plain read, which neither waits for a write nor holds it up, settled by
// store.Settler before it is answered (settledPageOn): AUTO_INCREMENT hands out ids before their
// rows commit, or are even in the table, so a page can lack a lower id still on its way, and a
// cursor past it would skip that pet for good once it commits. A statement that does not end
// within timeout is ended on the server too (MariaDB's SET STATEMENT max_statement_time,
// MySQL's MAX_EXECUTION_TIME hint; each ignores the other's comment), rather than keep a
// server thread after the client went: 503.
func newListStatements(dialect string, timeout time.Duration) listStatements {
	if dialect != migrations.MySQL {
		return withSuffix("SELECT "+listColumns, "")
	}
	return mysqlListStatements(timeout, "", "")
}

// galeraListStatements are the listing statements on a Galera cluster: a locking read, which
// waits for the node's own writes in flight, run once the node has applied everything the
// cluster committed before it (wsrep_sync_wait=1), so that a pet committed through another
// node a moment before is listed. Writes still in flight on other nodes are store.Settler's.
func galeraListStatements(timeout time.Duration) listStatements {
	return mysqlListStatements(timeout, ", wsrep_sync_wait=1", " LOCK IN SHARE MODE")
}

// replicaListStatements are the listing statements on a replica: plain reads, whose pages are
// used only where they are certainly the primary's (listOnReplica).
func replicaListStatements(timeout time.Duration) listStatements {
	return mysqlListStatements(timeout, "", "")
}

const listColumns = "id, name, category_id, status FROM pets "

// mysqlListStatements returns the MySQL listing statements, with the MariaDB session
// settings of vars (", NAME=VALUE...") and each ending in suffix.
func mysqlListStatements(timeout time.Duration, vars, suffix string) listStatements {
	head := fmt.Sprintf("/*M! SET STATEMENT max_statement_time=%.3f%s FOR*/ SELECT /*+ MAX_EXECUTION_TIME(%d) */ ",
		timeout.Seconds(), vars, timeout.Milliseconds())
	return withSuffix(head+listColumns, suffix)
}

// withSuffix returns the listing statements that start with head and end with suffix.
func withSuffix(head, suffix string) listStatements {
	return listStatements{
		all:           head + "WHERE id > ? ORDER BY id LIMIT ?" + suffix,
		byStatus:      head + "WHERE status = ? AND id > ? ORDER BY id LIMIT ?" + suffix,
		first:         head + "ORDER BY id LIMIT ?" + suffix,
		firstByStatus: head + "WHERE status = ? ORDER BY id LIMIT ?" + suffix,
	}
}
