package app

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"petstore/config"
	"petstore/internal/version"
	"petstore/migrations"
	"petstore/observe"
	"petstore/store"
)

// ErrUsage marks a command line that names no command petstore runs; Main prints the error
// and the commands, and exits 2.
var ErrUsage = errors.New("not a petstore command line")

// usageError is a command line petstore cannot run, saying what is wrong with it.
type usageError string

func (e usageError) Error() string        { return string(e) }
func (e usageError) Is(target error) bool { return target == ErrUsage }

// Main runs the petstore program: it tunes the runtime (TuneRuntime), runs the command that
// args name until SIGINT or SIGTERM (Run), and returns the exit status: 0, 2 for a command line
// that names no command, 1 for any other error, which it prints to stderr.
func Main(args, environ []string, stdout, stderr io.Writer) int {
	TuneRuntime(args)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := Run(ctx, args, environ, stdout, stderr)
	if err == nil {
		return 0
	}
	fmt.Fprintln(stderr, "petstore:", err)
	if errors.Is(err, ErrUsage) {
		printCommands(stderr)
		return 2
	}
	return 1
}

// Run runs the command that args name until ctx is done: serve, migrate, keys, documents,
// version or help. Settings come from the flags and from environ, in os.Environ's form (config); logs go
// to stderr.
func Run(ctx context.Context, args, environ []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return usageError("no command")
	}
	r := runner{environ: environ, stdout: stdout, stderr: stderr}
	switch args[0] {
	case "serve":
		return r.withConfig(ctx, serveCmd, args[1:], nil, func(cfg config.Config, _ *flag.FlagSet) error {
			return Serve(ctx, cfg, stdout)
		})
	case "migrate":
		return r.migrate(ctx, args[1:])
	case "keys":
		return r.keys(ctx, args[1:])
	case "documents":
		return r.documentsCommand(ctx, args[1:])
	case "--version", "-version", "version":
		_, err := fmt.Fprintln(stdout, version.String())
		return err
	case "help", "-h", "-help", "--help":
		printCommands(stdout)
		return nil
	}
	return usageError(fmt.Sprintf("unknown command %q", args[0]))
}

// runner is what a command runs with: the environment and the output streams.
type runner struct {
	environ        []string
	stdout, stderr io.Writer
}

// getenv returns the value of the variable name in r's environment; the last one wins, as in
// os.Getenv.
func (r runner) getenv(name string) string {
	for i := len(r.environ) - 1; i >= 0; i-- {
		if v, ok := strings.CutPrefix(r.environ[i], name+"="); ok {
			return v
		}
	}
	return ""
}

// logFlushEvery is the longest a log line waits in observe.LogWriter's buffer.
const logFlushEvery = 100 * time.Millisecond

// withConfig parses the settings and c's own flags (defined by extra), sets up logging, warns
// of unknown PETSTORE_ variables, and calls fn. -h prints c's help to stdout.
func (r runner) withConfig(ctx context.Context, c command, args []string, extra func(*flag.FlagSet),
	fn func(config.Config, *flag.FlagSet) error) error {
	cfg, fs, err := r.settings(c, args, extra)
	if errors.Is(err, flag.ErrHelp) {
		printHelp(r.stdout, c, fs)
		return nil
	}
	if err != nil {
		return err
	}
	logs := observe.NewLogWriter(r.stderr, logFlushEvery)
	defer logs.Close()
	slog.SetDefault(slog.New(observe.NewJSONLogHandler(logs, &slog.HandlerOptions{Level: cfg.LogLevel})))
	slog.InfoContext(ctx, "petstore "+c.name, "version", version.Version(), "commit", version.Commit(), "config", cfg)
	for _, u := range config.UnknownVariables(r.environ) {
		attrs := []any{"variable", u.Name}
		if u.Meant != "" {
			attrs = append(attrs, "meant", u.Meant)
		}
		slog.WarnContext(ctx, u.String(), attrs...)
	}
	return fn(cfg, fs)
}

// settings returns the settings of r's environment and args over DefaultConfig, and the flags
// of c's groups and its own (defined by extra), which args set: config.Parse, then the rules of
// the parts (checkParts).
func (r runner) settings(c command, args []string, extra func(*flag.FlagSet)) (config.Config, *flag.FlagSet, error) {
	fs := flag.NewFlagSet("petstore "+c.name, flag.ContinueOnError)
	fs.SetOutput(io.Discard) // errors are returned; -h is printed by printHelp
	cfg := DefaultConfig()
	cfg.Register(fs, c.groups)
	if extra != nil {
		extra(fs)
	}
	if err := config.Parse(fs, &cfg, args, r.getenv); err != nil {
		return cfg, fs, err
	}
	return cfg, fs, checkParts(cfg)
}

// OpenDB opens the configured database and applies pending migrations, or with
// PETSTORE_MIGRATE=off checks that none is pending. A database that still lacks one is an
// error that says to run petstore migrate up.
func OpenDB(ctx context.Context, cfg config.Config, opts ...store.Option) (*store.DB, error) {
	db, err := store.Open(ctx, cfg.DB, store.Pool(cfg.Pool), append(opts, store.WithTimeout(cfg.DBTimeout))...)
	if err != nil {
		return nil, err
	}
	if cfg.Migrate == config.MigrateOff {
		err = migrations.Check(ctx, db.SQL(), db.Dialect)
	} else {
		_, err = db.Migrate(ctx)
	}
	if errors.Is(err, migrations.ErrBehind) {
		err = fmt.Errorf("%w; run petstore migrate up first, as a database user that may change the schema (deploy/mysql/grants.sql)", err)
	}
	if err != nil {
		_ = db.Close()
		return nil, err
	}
	return db, nil
}
