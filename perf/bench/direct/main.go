// Command direct is a comparison server of `make bench`: the three REST endpoints of the pet
// store (GET and POST /v1/pets, GET /v1/pets/{petId}) written the way a competent Go developer
// would write them without GraphQL, after reading GORM's performance guide: Gin handlers
// binding requests with struct tags and calling GORM directly, with the guide's settings
// (PrepareStmt: a prepared-statement cache; SkipDefaultTransaction: no transaction around a
// single write; only the needed columns selected). It uses the service's own key check and
// in-process rate limiter,
// and the service's schema (its migrations run through petstore/store), so that what differs
// from the service is only the layer in between.
//
//	go run ./bench/direct -addr 127.0.0.1:8081 -db mysql://root:@127.0.0.1:3306/petstore_bench
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/gin-gonic/gin"
	"github.com/glebarez/sqlite"
	"gorm.io/driver/mysql"
	"gorm.io/gorm"

	"petstore/auth"
	"petstore/migrations"
	"petstore/perf/bench/internal/benchsrv"
	"petstore/ratelimit"
	"petstore/store"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "direct:", err)
		os.Exit(1)
	}
}

// run serves until ctx is done.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	f, err := benchsrv.ParseFlags("direct", args, stderr)
	if err != nil {
		return err
	}
	sdb, err := store.Open(ctx, f.DB, store.DefaultPool)
	if err != nil {
		return err
	}
	defer sdb.Close()
	if _, err := sdb.Migrate(ctx); err != nil {
		return err
	}
	db, err := openGORM(sdb)
	if err != nil {
		return err
	}
	limiter, err := ratelimit.New(ratelimit.DefaultConfig(), ratelimit.NewMemoryCounters(nil))
	if err != nil {
		return err
	}
	authn := auth.NewAuthenticator(db, nil, f.KeyPrefix, 0, 0)
	return benchsrv.Serve(ctx, "direct", f.Addr, newRouter(db, authn, limiter), stdout)
}

// openGORM opens GORM as its performance guide advises (PrepareStmt, SkipDefaultTransaction)
// on the connection pool of sdb, which
// petstore/store has sized as the service's (16 connections on MySQL, 1 on SQLite): a
// competent developer sizes the pool, and the comparison is fairer when both servers have the
// same one.
func openGORM(sdb *store.DB) (*gorm.DB, error) {
	var dialector gorm.Dialector = mysql.New(mysql.Config{Conn: sdb.SQL()})
	if sdb.Dialect == migrations.SQLite {
		dialector = &sqlite.Dialector{Conn: sdb.SQL()}
	}
	return gorm.Open(dialector, &gorm.Config{PrepareStmt: true, SkipDefaultTransaction: true})
}

// newRouter returns the Gin engine: gin.Default (a log line per request, recovery), /healthz,
// and the /v1 routes behind the service's key check and rate limiter, in the service's order
// (identify, gate, look up, limit, require).
func newRouter(db *gorm.DB, authn *auth.Authenticator, limiter *ratelimit.Limiter) *gin.Engine {
	gin.SetMode(gin.ReleaseMode)
	r := gin.Default()
	r.NoRoute(func(c *gin.Context) { fail(c, 404, "not_found", "no such resource") })
	r.GET("/healthz", func(c *gin.Context) { c.JSON(200, gin.H{"status": "ok"}) })
	v1 := r.Group("/v1", authn.Identify, limiter.Gate, authn.Lookup, limiter.Middleware, auth.Require)
	v1.GET("/pets", listPets(db))
	v1.POST("/pets", createPet(db))
	v1.GET("/pets/:petId", getPet(db))
	return r
}
