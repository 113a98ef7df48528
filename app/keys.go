package app

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"petstore/auth"
	"petstore/config"
)

// keys runs `petstore keys create|list|revoke`.
func (r runner) keys(ctx context.Context, args []string) error {
	if len(args) == 0 {
		return usageError("keys needs create, list or revoke")
	}
	switch args[0] {
	case "create":
		var spec auth.KeySpec
		flags := func(fs *flag.FlagSet) {
			fs.StringVar(&spec.Plan, "plan", "", "one of "+strings.Join(auth.PlanNames, ", "))
			fs.Int64Var(&spec.PerMinute, "per-minute", 0, "enterprise: requests per minute")
			fs.Int64Var(&spec.PerDay, "per-day", 0, "enterprise: requests per day")
			fs.StringVar(&spec.Name, "name", "", "a label for people")
		}
		return r.withConfig(ctx, createCmd, args[1:], flags, func(cfg config.Config, _ *flag.FlagSet) error {
			return createKey(ctx, cfg, spec, r.stdout)
		})
	case "list":
		return r.withConfig(ctx, listCmd, args[1:], nil, func(cfg config.Config, _ *flag.FlagSet) error {
			return listKeys(ctx, cfg, r.stdout)
		})
	case "revoke":
		return r.withConfig(ctx, revokeCmd, args[1:], nil, func(cfg config.Config, fs *flag.FlagSet) error {
			id, err := strconv.ParseInt(fs.Arg(0), 10, 64)
			if fs.NArg() != 1 || err != nil {
				return usageError("keys revoke needs the id of one key (keys list shows them): petstore keys revoke ID")
			}
			return revokeKey(ctx, cfg, id, r.stdout)
		})
	}
	return usageError(fmt.Sprintf("unknown command \"keys %s\": keys needs create, list or revoke", args[0]))
}

// createKey creates a key and prints it alone on the last line.
func createKey(ctx context.Context, cfg config.Config, spec auth.KeySpec, stdout io.Writer) error {
	db, err := OpenDB(ctx, cfg)
	if err != nil {
		return err
	}
	defer db.Close()
	key, rec, err := auth.CreateKey(ctx, db.DB, auth.PrefixFor(cfg.Env), spec)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "created API key %d (plan %s); it is shown once, only its hash is stored:\n%s\n", rec.ID, rec.Plan, key)
	return nil
}

// listKeys prints every key, never its secret.
func listKeys(ctx context.Context, cfg config.Config, stdout io.Writer) error {
	db, err := OpenDB(ctx, cfg)
	if err != nil {
		return err
	}
	defer db.Close()
	list, err := auth.ListKeys(ctx, db.DB)
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tKEY\tNAME\tPLAN\tPER MINUTE\tPER DAY\tCREATED\tREVOKED")
	for _, k := range list {
		perMinute, perDay := "plan", "plan"
		if k.PerMinute != nil && k.PerDay != nil {
			perMinute, perDay = strconv.FormatInt(*k.PerMinute, 10), strconv.FormatInt(*k.PerDay, 10)
		}
		revoked := "-"
		if k.RevokedAt != nil {
			revoked = k.RevokedAt.UTC().Format(time.RFC3339)
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", k.ID, k.Hint, k.Name, k.Plan, perMinute, perDay,
			k.CreatedAt.UTC().Format(time.RFC3339), revoked)
	}
	return tw.Flush()
}

// revokeKey revokes the key with id.
func revokeKey(ctx context.Context, cfg config.Config, id int64, stdout io.Writer) error {
	db, err := OpenDB(ctx, cfg)
	if err != nil {
		return err
	}
	defer db.Close()
	if err := auth.RevokeKey(ctx, db.DB, id); err != nil {
		if errors.Is(err, auth.ErrKeyNotFound) {
			return fmt.Errorf("no API key with id %d", id)
		}
		return err
	}
	fmt.Fprintf(stdout, "revoked API key %d; servers refuse it within %s\n", id, cfg.KeyCacheTTL)
	return nil
}
