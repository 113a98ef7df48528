package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"petstore/perf/bench/internal/loadgen"
)

// The rows of the table, in the order each round runs them. POST runs last of its database's
// rows: it grows the table the others read; POST with a webhook endpoint right after it, on a
// database of its own, so that the two cells of their ratio run seconds apart.
const (
	rowListRedis  = "list-redis"
	rowList       = "list"
	rowGraphQL    = "graphql"
	rowList100    = "list-100"
	rowGQLConn    = "graphql-conn"
	rowListSold   = "list-sold"
	rowGet        = "get"
	rowListSQLite = "list-sqlite"
	rowPageFirst  = "page-first"
	rowPageFar    = "page-far"
	rowPost       = "post"
	rowPostHook   = "post-hook"
	rowPostWorker = "post-hook-worker"
	rowRSS        = "rss" // not a row: the mixed load before the service's memory is read
)

// rowIDs lists the values -only accepts.
func rowIDs() []string {
	return []string{rowListRedis, rowList, rowGraphQL, rowList100, rowGQLConn, rowListSold, rowGet, rowListSQLite, rowPageFirst, rowPageFar, rowPost, rowPostHook, rowPostWorker, rowRSS}
}

// row is one line of the table: a workload on one database, run against some servers in turn.
type row struct {
	id       string
	label    string
	workload string
	servers  []*server // in the order of each round: A B C D
	path     string    // the page of a paging row
}

// bench is one run: its work folder, binaries, datasets, servers and rows.
type bench struct {
	cfg      config
	log      io.Writer
	work     string
	keepWork bool
	tag      string // makes POSTed names unique across runs
	bins     map[string]string
	servers  []*server
	plan     []*row
	rss      *server // the server whose memory is read after the mixed load
	out      *os.File
}

// newBench makes the work folder.
func newBench(cfg config, log io.Writer) (*bench, error) {
	work, err := os.MkdirTemp("", "petstore-bench-")
	if err != nil {
		return nil, err
	}
	b := &bench{cfg: cfg, log: log, work: work, keepWork: cfg.keep, tag: strconv.FormatInt(time.Now().UnixNano(), 36)}
	if cfg.out != "" {
		if b.out, err = os.Create(cfg.out); err != nil {
			return nil, err
		}
	}
	return b, nil
}

// wants reports whether the row id is to run.
func (b *bench) wants(id string) bool {
	return b.cfg.only == "" || slices.Contains(strings.Split(b.cfg.only, ","), id)
}

// close stops every server and removes the work folder unless it is to be kept.
func (b *bench) close() {
	for _, s := range b.servers {
		s.stop()
	}
	if b.out != nil {
		_ = b.out.Close()
	}
	if b.keepWork {
		fmt.Fprintf(b.log, "bench: work folder (binaries, databases, server logs) kept in %s\n", b.work)
		return
	}
	_ = os.RemoveAll(b.work)
}

// setUp builds the binaries, seeds the databases, starts the servers and lays out the rows.
func (b *bench) setUp(ctx context.Context) error {
	root, err := repoRoot()
	if err != nil {
		return err
	}
	b.logf("building the service, direct and raw into %s", b.work)
	if b.bins, err = build(ctx, root, b.work, b.log); err != nil {
		return err
	}
	if err := b.layOutMySQL(ctx); err != nil {
		return err
	}
	if err := b.layOutHooks(ctx); err != nil {
		return err
	}
	if err := b.layOutSQLite(ctx); err != nil {
		return err
	}
	if err := b.layOutPages(ctx); err != nil {
		return err
	}
	return b.probe(ctx)
}

// layOutMySQL seeds the MySQL database and adds its rows.
func (b *bench) layOutMySQL(ctx context.Context) error {
	ids := []string{rowListRedis, rowGraphQL, rowList, rowList100, rowGQLConn, rowListSold, rowGet, rowPost, rowRSS}
	if !slices.ContainsFunc(ids, b.wants) {
		return nil
	}
	data, err := b.seedDB(ctx, b.cfg.mysql, b.cfg.rows)
	if err != nil {
		return err
	}
	all, err := b.startColumns(ctx, "mysql", &data, columns...)
	if err != nil {
		return err
	}
	svc, svcOff, direct, raw := all[0], all[1], all[2], all[3]
	b.rss = svc
	// The cells of a ratio run close together: the Redis limiter just before the REST list on
	// the same service, GraphQL just after raw's REST list. The cache-off service runs the rows
	// that read pages; a single pet and POST read none.
	if b.wants(rowListRedis) {
		if err := pingRedis(ctx, b.cfg.redis); err != nil {
			return err
		}
		redis := map[string]string{"PETSTORE_REDIS_URL": b.cfg.redis}
		s, err := b.start(ctx, "service/mysql+redis", colService, &data, redis)
		if err != nil {
			return err
		}
		sOff, err := b.start(ctx, "service/mysql+redis-cache-off", colCacheOff, &data, redis)
		if err != nil {
			return err
		}
		b.add(rowListRedis, "REST list=20, Redis limiter · MySQL", loadgen.List, s, sOff)
	}
	b.add(rowList, "REST GET /v1/pets?limit=20 · MySQL", loadgen.List, all...)
	b.add(rowGraphQL, "GraphQL pets(limit:20) · MySQL", loadgen.GraphQL, svc, svcOff)
	b.add(rowList100, "REST GET /v1/pets?limit=100 · MySQL", loadgen.List100, svc, svcOff)
	b.add(rowGQLConn, "GraphQL petsConnection(first:100) · MySQL", loadgen.GraphQLConn, svc, svcOff)
	b.add(rowListSold, "REST ?status=sold&limit=100 · MySQL", loadgen.ListSold, all...)
	b.add(rowGet, "REST GET /v1/pets/{id} · MySQL", loadgen.Get, svc, direct, raw)
	b.add(rowPost, "REST POST /v1/pets · MySQL", loadgen.Post, svc, direct, raw)
	return nil
}

// layOutSQLite seeds a SQLite database and adds the REST list row on it.
func (b *bench) layOutSQLite(ctx context.Context) error {
	if !b.wants(rowListSQLite) {
		return nil
	}
	dsn := "sqlite:" + b.work + "/bench.sqlite"
	data, err := b.seedDB(ctx, dsn, b.cfg.rows)
	if err != nil {
		return err
	}
	all, err := b.startColumns(ctx, "sqlite", &data, columns...)
	if err != nil {
		return err
	}
	b.add(rowListSQLite, "REST GET /v1/pets?limit=20 · SQLite", loadgen.List, all...)
	return nil
}

// layOutPages seeds the paging database, finds the far page and adds the paging rows.
func (b *bench) layOutPages(ctx context.Context) error {
	if !b.wants(rowPageFirst) && !b.wants(rowPageFar) {
		return nil
	}
	dsn, err := siblingDB(b.cfg.mysql, "_pages")
	if err != nil {
		return err
	}
	data, err := b.seedDB(ctx, dsn, b.cfg.pageRows)
	if err != nil {
		return err
	}
	both, err := b.startColumns(ctx, "mysql-pages", &data, colService, colCacheOff)
	if err != nil {
		return err
	}
	p := loadgen.Params{Host: both[0].addr, Key: data.key}
	far, err := loadgen.FindPage(ctx, both[0].addr, p, b.cfg.pageLimit, b.cfg.farPage())
	if err != nil {
		return err
	}
	first := "/v1/pets?limit=" + strconv.Itoa(b.cfg.pageLimit)
	b.add(rowPageFirst, fmt.Sprintf("page 1, limit %d, %s rows · MySQL", b.cfg.pageLimit, count(b.cfg.pageRows)), loadgen.Page, both...).path = first
	b.add(rowPageFar, fmt.Sprintf("page %s by cursor, same rows · MySQL", count(b.cfg.farPage())), loadgen.Page, both...).path = far
	return nil
}

// seedDB seeds rows pets in the database at dsn anew and creates its key (prepare), saying so.
func (b *bench) seedDB(ctx context.Context, dsn string, rows int) (dataset, error) {
	b.logf("seeding %d pets in %s", rows, dsn)
	return prepare(ctx, b.bins[colService], dsn, rows, b.log)
}

// startColumns starts a server of each column against data, the database db names.
func (b *bench) startColumns(ctx context.Context, db string, data *dataset, cols ...string) ([]*server, error) {
	var all []*server
	for _, col := range cols {
		s, err := b.start(ctx, col+"/"+db, col, data, nil)
		if err != nil {
			return nil, err
		}
		all = append(all, s)
	}
	return all, nil
}

func (b *bench) start(ctx context.Context, name, column string, data *dataset, extra map[string]string) (*server, error) {
	s, err := startServer(ctx, name, column, b.bins[binary(column)], b.work, data, extra)
	if err != nil {
		b.keepWork = true
		return nil, err
	}
	b.servers = append(b.servers, s)
	b.logf("started %s on %s", name, s.addr)
	return s, nil
}

// add appends a row unless -only leaves it out; it returns the row (a throwaway when left out).
func (b *bench) add(id, label, workload string, servers ...*server) *row {
	r := &row{id: id, label: label, workload: workload, servers: servers}
	if b.wants(id) {
		b.plan = append(b.plan, r)
	}
	return r
}

// probe checks every service's page cache, one answer of every cell and the delivery of a
// webhook endpoint's first pet before any load, so that a broken server fails fast.
func (b *bench) probe(ctx context.Context) error {
	for _, s := range b.servers {
		if err := s.checkPageCache(ctx); err != nil {
			b.keepWork = true
			return fmt.Errorf("%s: %w", s.name, err)
		}
	}
	for _, r := range b.plan {
		for _, s := range r.servers {
			a, err := loadgen.Probe(ctx, s.addr, b.builder(r, s, 0))
			if err == nil {
				err = loadgen.Check(r.workload, a)
			}
			if err == nil && s.hook != nil {
				_, err = s.hook.drain(ctx, 1) // its endpoint gets the pet
			}
			if err != nil {
				b.keepWork = true
				return fmt.Errorf("probe %s on %s: %w", r.id, s.name, err)
			}
		}
	}
	return nil
}

// builder returns the request builder of row r against s in a round (0: warm-up; negative: the
// settling run before round -round).
func (b *bench) builder(r *row, s *server, round int) loadgen.Builder {
	p := loadgen.Params{
		Host: s.addr, Key: s.data.key, Tag: fmt.Sprintf("%s-%s-r%d", b.tag, s.column, round),
		MinID: s.data.minID, MaxID: s.data.maxID, Path: r.path,
	}
	bld, err := loadgen.Build(r.workload, p)
	if err != nil {
		panic(err) // the rows are laid out above with every parameter their workload needs
	}
	return bld
}

func (b *bench) logf(format string, args ...any) {
	fmt.Fprintf(b.log, "bench: "+format+"\n", args...)
}
