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
	"syscall"
	"time"

	"petstore/config"
	"petstore/internal/version"
	"petstore/observe"
	"petstore/store"
)

// ErrUsage marks a command line that names no command; the program exits 2 on it.
var ErrUsage = errors.New("usage: petstore serve | migrate | keys create|list|revoke | --version (-h for flags)")

// Main runs the petstore program: it tunes the runtime (TuneRuntime), runs the command that
// args name until SIGINT or SIGTERM (Run), and returns the exit status: 0, 2 for a command line
// that names no command, 1 for any other error, which it prints to stderr.
func Main(args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	TuneRuntime(args)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := Run(ctx, args, getenv, stdout, stderr)
	if err == nil {
		return 0
	}
	fmt.Fprintln(stderr, "petstore:", err)
	if errors.Is(err, ErrUsage) {
		return 2
	}
	return 1
}

// Run runs the command that args name until ctx is done: serve, migrate, keys or --version.
// Settings come from the flags and from getenv (config); logs go to stderr.
func Run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return ErrUsage
	}
	switch args[0] {
	case "serve":
		return withConfig(ctx, "serve", args[1:], getenv, stderr, nil, func(cfg config.Config, _ *flag.FlagSet) error {
			return Serve(ctx, cfg, stdout)
		})
	case "migrate":
		return withConfig(ctx, "migrate", args[1:], getenv, stderr, nil, func(cfg config.Config, _ *flag.FlagSet) error {
			db, err := OpenDB(ctx, cfg)
			if err == nil {
				_ = db.Close()
			}
			return err
		})
	case "keys":
		return keys(ctx, args[1:], getenv, stdout, stderr)
	case "--version", "-version", "version":
		_, err := fmt.Fprintln(stdout, version.String())
		return err
	}
	return ErrUsage
}

// logFlushEvery is the longest a log line waits in observe.LogWriter's buffer.
const logFlushEvery = 100 * time.Millisecond

// withConfig parses the settings and the command's own flags (defined by extra), sets up
// logging, and calls fn.
func withConfig(ctx context.Context, name string, args []string, getenv func(string) string, stderr io.Writer,
	extra func(*flag.FlagSet), fn func(config.Config, *flag.FlagSet) error) error {
	fs := flag.NewFlagSet("petstore "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfg := config.Default()
	cfg.Register(fs)
	if extra != nil {
		extra(fs)
	}
	if err := config.Parse(fs, &cfg, args, getenv); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	logs := observe.NewLogWriter(stderr, logFlushEvery)
	defer logs.Close()
	slog.SetDefault(slog.New(observe.NewJSONLogHandler(logs, &slog.HandlerOptions{Level: cfg.LogLevel})))
	slog.InfoContext(ctx, "petstore "+name, "version", version.Version(), "commit", version.Commit(), "config", cfg)
	return fn(cfg, fs)
}

// OpenDB opens the configured database and applies pending migrations.
func OpenDB(ctx context.Context, cfg config.Config, opts ...store.Option) (*store.DB, error) {
	db, err := store.Open(ctx, cfg.DB, cfg.Pool, append(opts, store.WithTimeout(cfg.DBTimeout))...)
	if err != nil {
		return nil, err
	}
	if _, err := db.Migrate(ctx); err != nil {
		_ = db.Close()
		return nil, err
	}
	return db, nil
}
