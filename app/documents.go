package app

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"petstore/config"
	"petstore/documents"
	"petstore/graph"
)

// documentsCommand runs `petstore documents add|list|remove`.
func (r runner) documentsCommand(ctx context.Context, args []string) error {
	if len(args) == 0 {
		return usageError("documents needs add, list or remove")
	}
	switch args[0] {
	case "add":
		return r.withConfig(ctx, docAddCmd, args[1:], nil, func(cfg config.Config, fs *flag.FlagSet) error {
			if fs.NArg() == 0 {
				return usageError("documents add needs the manifests to add: petstore documents add FILE...")
			}
			return addDocuments(ctx, cfg, fs.Args(), r.stdout)
		})
	case "list":
		return r.withConfig(ctx, docListCmd, args[1:], nil, func(cfg config.Config, _ *flag.FlagSet) error {
			return listDocuments(ctx, cfg, r.stdout)
		})
	case "remove":
		return r.withConfig(ctx, docRemoveCmd, args[1:], nil, func(cfg config.Config, fs *flag.FlagSet) error {
			if fs.NArg() != 1 {
				return usageError("documents remove needs the id of one document (documents list shows them): petstore documents remove ID")
			}
			return removeDocument(ctx, cfg, fs.Arg(0), r.stdout)
		})
	}
	return usageError(fmt.Sprintf("unknown command \"documents %s\": documents needs add, list or remove", args[0]))
}

// addDocuments checks every document of the manifests files against the schema and cfg's
// GraphQL limits, and stores them all, or none when any is refused.
func addDocuments(ctx context.Context, cfg config.Config, files []string, stdout io.Writer) error {
	var docs []documents.Document
	var problems []string
	now := time.Now().UTC()
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			return err
		}
		entries, format, err := documents.Parse(data)
		if err != nil {
			return fmt.Errorf("%s: %w", file, err)
		}
		for _, e := range entries {
			checked, err := graph.CheckDocument(graphqlLimits(cfg), e.Body)
			if err != nil {
				problems = append(problems, fmt.Sprintf("%s: document %q%s:\n  %s", file, e.ID, nameOf(e.Name), strings.ReplaceAll(err.Error(), "\n", "\n  ")))
				continue
			}
			docs = append(docs, documents.Document{
				ID: e.ID, SHA256: documents.Hash(e.Body), Body: e.Body, Name: cmp.Or(e.Name, checked.Name),
				Type: cmp.Or(e.Type, checked.Type), Cost: checked.Cost, AddedAt: now,
			})
		}
		fmt.Fprintf(stdout, "%s: %d documents (%s)\n", file, len(entries), format)
	}
	if len(problems) > 0 {
		return fmt.Errorf("%d documents refused, none added:\n%s", len(problems), strings.Join(problems, "\n"))
	}
	db, err := OpenDB(ctx, cfg)
	if err != nil {
		return err
	}
	defer db.Close()
	res, err := documents.Add(ctx, db.DB, docs)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "added %d documents, %d listed already; servers run them within %s\n", res.Added, res.Unchanged, documents.DefaultRefreshEvery)
	return nil
}

// nameOf returns " (name)", or "" for no name.
func nameOf(name string) string {
	if name == "" {
		return ""
	}
	return " (" + name + ")"
}

// listDocuments prints every listed document, without its body.
func listDocuments(ctx context.Context, cfg config.Config, stdout io.Writer) error {
	db, err := OpenDB(ctx, cfg)
	if err != nil {
		return err
	}
	defer db.Close()
	list, err := documents.List(ctx, db.DB)
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tNAME\tTYPE\tCOST\tADDED")
	for _, d := range list {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", d.ID, cmp.Or(d.Name, "-"), d.Type, strconv.Itoa(d.Cost), d.AddedAt.UTC().Format(time.RFC3339))
	}
	return tw.Flush()
}

// removeDocument removes the document with id.
func removeDocument(ctx context.Context, cfg config.Config, id string, stdout io.Writer) error {
	db, err := OpenDB(ctx, cfg)
	if err != nil {
		return err
	}
	defer db.Close()
	if err := documents.Remove(ctx, db.DB, id); err != nil {
		if errors.Is(err, documents.ErrNotFound) {
			return fmt.Errorf("no document with id %q", id)
		}
		return err
	}
	fmt.Fprintf(stdout, "removed document %s; servers refuse it within %s\n", id, documents.DefaultRefreshEvery)
	return nil
}
