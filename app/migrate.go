package app

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"petstore/config"
	"petstore/migrations"
	"petstore/store"
)

// migrate runs `petstore migrate up|down|status`; `petstore migrate` alone is `migrate up`.
func (r runner) migrate(ctx context.Context, args []string) error {
	sub := "up"
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		sub, args = args[0], args[1:]
	}
	switch sub {
	case "up":
		return r.withConfig(ctx, migrateUpCmd, args, nil, func(cfg config.Config, _ *flag.FlagSet) error {
			return withDB(ctx, cfg, func(db *store.DB) error {
				n, err := db.Migrate(ctx)
				if err == nil {
					fmt.Fprintf(r.stdout, "migrations applied: %d; none is pending\n", n)
				}
				return err
			})
		})
	case "down":
		var dropData bool
		flags := func(fs *flag.FlagSet) {
			fs.BoolVar(&dropData, "drop-data", false, "roll back a migration whose down section drops data (tables, columns, rows)")
		}
		return r.withConfig(ctx, migrateDownCmd, args, flags, func(cfg config.Config, _ *flag.FlagSet) error {
			return withDB(ctx, cfg, func(db *store.DB) error {
				m, err := migrations.Down(ctx, db.SQL(), db.Dialect, dropData)
				if errors.Is(err, migrations.ErrDropsData) {
					return fmt.Errorf("%w; back it up first (docs/operations.md), then run petstore migrate down --drop-data", err)
				}
				if err == nil {
					fmt.Fprintf(r.stdout, "rolled back migration %d (%s)\n", m.Version, m.File)
				}
				return err
			})
		})
	case "status":
		return r.withConfig(ctx, migrateStatusCmd, args, nil, func(cfg config.Config, _ *flag.FlagSet) error {
			return withDB(ctx, cfg, func(db *store.DB) error {
				list, err := migrations.Status(ctx, db.SQL(), db.Dialect)
				if err != nil {
					return err
				}
				return printStatus(r.stdout, list)
			})
		})
	}
	return usageError(fmt.Sprintf("unknown command \"migrate %s\": migrate needs up, down or status", sub))
}

// withDB opens the configured database, changing nothing, and runs fn on it.
func withDB(ctx context.Context, cfg config.Config, fn func(*store.DB) error) error {
	db, err := store.Open(ctx, cfg.DB, store.Pool(cfg.Pool), store.WithTimeout(cfg.DBTimeout))
	if err != nil {
		return err
	}
	defer db.Close()
	return fn(db)
}

// printStatus prints each migration of list, applied or pending, then how many are pending.
func printStatus(w io.Writer, list []migrations.Migration) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "VERSION\tFILE\tSTATE\tAPPLIED AT")
	pending := 0
	for _, m := range list {
		file, state, at := m.File, "applied", m.AppliedAt
		if file == "" {
			file = "(not in this build: applied by a later one)"
		}
		if !m.Applied {
			state, at = "pending", "-"
			pending++
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\n", m.Version, file, state, at)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "pending: %d\n", pending)
	return err
}
