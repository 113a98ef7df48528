package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"gorm.io/driver/mysql"
	"gorm.io/gorm"

	"petstore/migrations"
)

// MaxReplicaLag bounds how far behind the primary a replica may be and still serve reads: a
// replica further behind, or one that does not answer, is skipped until it catches up.
const MaxReplicaLag = time.Second

// ReplicaTimeout is the longest a read on a replica may take (within the statement timeout):
// a replica that does not answer within it is skipped, and the read made on the primary.
const ReplicaTimeout = time.Second

// replicaPoll is how often the primary's position and settled pets, and each replica's
// position, are read.
const replicaPoll = 100 * time.Millisecond

// Replicas routes reads to MariaDB replicas of the primary (PETSTORE_DB_REPLICAS). Nothing goes
// to a replica unless its caller asks with Pick: writes, transactions, migrations and every
// read that must see the latest write stay on the primary.
//
// Every replicaPoll it reads the primary's GTID position (@@gtid_binlog_pos) and each replica's
// (@@gtid_slave_pos); a replica that has applied a position the primary had at time t holds
// every commit made before t. A replica that holds none of the positions read within
// MaxReplicaLag, or that does not answer, is skipped.
//
// It also keeps the primary's pets settled (Settler.Advance, every replicaPoll): the highest id
// up to which every pet id handed out has committed or never will. Ids are handed out before
// commit, and a replica applies transactions in the primary's commit order, so a replica can
// hold pet 60 and not yet pet 50; up to the settled id it cannot: the GTID position read after
// the settled id covers their commits. A replica that reached that position lacks no pet up
// to that id: a pet it lacks there does not exist, and a page of pets all at or below it is
// the page the primary would serve.
type Replicas struct {
	primary *sql.DB
	settler *Settler // the primary's
	members []*replica
	now     func() time.Time
	next    atomic.Uint64 // round robin over members

	mu      sync.Mutex
	samples []sample // the primary's, oldest first, within MaxReplicaLag (and the newest)

	reads, served atomic.Int64
	stop          context.CancelFunc
	watchers      sync.WaitGroup
}

// replica is one replica and what it was last known to hold.
type replica struct {
	db    *DB
	fresh atomic.Pointer[freshness] // nil: skipped
}

// freshness is what a replica holds.
type freshness struct {
	asOf    time.Time // it holds every commit the primary made before asOf
	settled int64     // every pet id up to this is final on it
}

// sample is the primary at one poll: a replica that applied pos holds every commit made before
// at, and every pet id up to settled is final on it.
type sample struct {
	at      time.Time
	pos     gtidPos
	settled int64
}

// Read is a replica picked to serve one read, which Context bounds.
type Read struct {
	// DB is the replica's handle.
	DB *gorm.DB
	// Settled is the pet id up to which the replica lacks no pet: it has every pet with an id
	// at most Settled that exists on the primary.
	Settled int64
	m       *replica
}

// OpenReplicas opens the replicas named by urls (mysql:// addresses, each with a pool sized
// like the primary's) of primary, a MariaDB server with its binary log on, and starts watching
// them. A replica that does not answer (down, or still being built without the database) is
// skipped until it answers and is fresh, from the start: the instance serves from the primary
// meanwhile. Close stops the watching and closes the replicas.
func OpenReplicas(ctx context.Context, primary *DB, urls []string, pool Pool) (*Replicas, error) {
	if primary.Dialect != migrations.MySQL {
		return nil, errors.New("store: read replicas need a MySQL primary (PETSTORE_DB=mysql://...)")
	}
	if err := checkBinlog(ctx, primary.SQL()); err != nil {
		return nil, err
	}
	rs := &Replicas{primary: primary.SQL(), settler: primary.Settler, now: time.Now}
	for _, u := range urls {
		db, err := openReplica(u, pool, primary.open)
		if err != nil {
			_ = rs.Close()
			return nil, err
		}
		rs.members = append(rs.members, &replica{db: db})
	}
	rs.start()
	return rs, nil
}

// checkBinlog checks that the primary is MariaDB with its binary log on, whose GTID position
// tells how far a replica is behind.
func checkBinlog(ctx context.Context, db *sql.DB) error {
	var on bool
	var pos string
	if err := db.QueryRowContext(ctx, "SELECT @@log_bin, @@gtid_binlog_pos").Scan(&on, &pos); err != nil {
		return fmt.Errorf("store: read replicas need a MariaDB primary (GTID positions): %w", err)
	}
	if !on {
		return errors.New("store: read replicas need the primary's binary log (log_bin), from which they replicate")
	}
	return nil
}

// openReplica opens the replica at dsn without connecting (it may be down at first), with
// open when not nil.
func openReplica(dsn string, pool Pool, open Opener) (*DB, error) {
	if !strings.HasPrefix(dsn, "mysql://") {
		return nil, errors.New("store: a replica must be mysql://USER:PASS@HOST:PORT/DBNAME")
	}
	cfg, err := mysqlConfig(dsn)
	if err != nil {
		return nil, err
	}
	dialector, err := withConn(mysql.New(mysql.Config{DSNConfig: cfg, SkipInitializeWithVersion: true}), open)
	if err != nil {
		return nil, fmt.Errorf("store: open replica: %w", err)
	}
	gcfg := gormConfig()
	gcfg.DisableAutomaticPing = true // a replica down or being rebuilt is skipped, not fatal
	gdb, err := gorm.Open(dialector, gcfg)
	if err != nil {
		return nil, fmt.Errorf("store: open replica: %w", err)
	}
	db := &DB{DB: gdb, Dialect: migrations.MySQL}
	sizePool(db.SQL(), pool)
	return db, nil
}

// Pick returns a replica that may serve a read now, in turn, or false when none may (rs is
// nil, or every replica is down or lagging): read from the primary then. Report how the read
// went with Release.
func (rs *Replicas) Pick() (Read, bool) {
	if rs == nil {
		return Read{}, false
	}
	rs.reads.Add(1)
	now := rs.now()
	n := uint64(len(rs.members))
	start := rs.next.Add(1)
	for i := range n {
		m := rs.members[(start+i)%n]
		if f := m.usable(now); f != nil {
			return Read{DB: m.db.DB, Settled: f.settled, m: m}, true
		}
	}
	return Read{}, false
}

// Context returns ctx bounded by ReplicaTimeout, for the read on rd.
func (rd Read) Context(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, ReplicaTimeout)
}

// usable returns what m holds when it may serve reads at now, else nil.
func (m *replica) usable(now time.Time) *freshness {
	if f := m.fresh.Load(); f != nil && now.Sub(f.asOf) <= MaxReplicaLag {
		return f
	}
	return nil
}

// Release reports how the read on rd went: served says that its answer was used; an err other
// than gorm.ErrRecordNotFound (the replica is unreachable, slow or broken) skips the replica
// until it answers a poll again.
func (rs *Replicas) Release(rd Read, served bool, err error) {
	if served {
		rs.served.Add(1)
	}
	if err != nil && !errors.Is(err, gorm.ErrRecordNotFound) {
		rd.m.fresh.Store(nil)
	}
}

// Reads returns how many reads a replica served, out of all the reads that asked for one.
func (rs *Replicas) Reads() (served, all int64) {
	return rs.served.Load(), rs.reads.Load()
}

// Close stops watching the replicas and closes them.
func (rs *Replicas) Close() error {
	if rs.stop != nil {
		rs.stop()
		rs.watchers.Wait()
	}
	var errs []error
	for _, m := range rs.members {
		errs = append(errs, m.db.Close())
	}
	return errors.Join(errs...)
}

// Ready returns how many replicas may serve reads now and have every pet up to id settled
// (without counting a read).
func (rs *Replicas) Ready(id int64) int {
	n := 0
	now := rs.now()
	for _, m := range rs.members {
		if f := m.usable(now); f != nil && f.settled >= id {
			n++
		}
	}
	return n
}
