package app

import (
	"flag"
	"fmt"
	"io"
	"text/tabwriter"

	"petstore/config"
)

// command is a command of petstore that reads settings: its name, its usage line and what it
// does (for help), and the groups of settings it reads (config.Register).
type command struct {
	name, usage, what string
	groups            config.Group
}

// The commands that read settings.
var (
	serveCmd       = command{"serve", "serve [flags]", "applies pending migrations (unless PETSTORE_MIGRATE=off), serves the API until SIGINT or SIGTERM, then drains", config.All}
	migrateUpCmd   = command{"migrate up", "migrate up [flags]", "applies pending migrations and exits (migrate alone does the same)", config.Logs | config.Database}
	migrateDownCmd = command{"migrate down", "migrate down [--drop-data] [flags]",
		"rolls back the last migration applied; one that drops data only with --drop-data", config.Logs | config.Database}
	migrateStatusCmd = command{"migrate status", "migrate status [flags]", "lists the migrations, each applied or pending; changes nothing", config.Logs | config.Database}
	createCmd        = command{"keys create", "keys create --plan PLAN [--per-minute N --per-day N] [--name TEXT] [flags]",
		"creates an API key and prints it once (PLAN: free, pro, business, or enterprise with its limits)", config.Logs | config.Database | config.Env | config.Migrate}
	listCmd   = command{"keys list", "keys list [flags]", "lists the API keys: hint, name, plan, limits, dates; never the secret", config.Logs | config.Database | config.Migrate}
	revokeCmd = command{"keys revoke", "keys revoke [flags] ID", "revokes an API key", config.Logs | config.Database | config.KeyCache | config.Migrate}
	docAddCmd = command{"documents add", "documents add [flags] FILE...",
		"lists the GraphQL documents of Apollo persisted query manifests or graphql-codegen persisted-documents.json files, each checked against the schema and the GraphQL limits, all or none", config.Logs | config.Database | config.Migrate | config.GraphQL}
	docListCmd   = command{"documents list", "documents list [flags]", "lists the trusted GraphQL documents: id, operation name and type, cost, date added", config.Logs | config.Database | config.Migrate}
	docRemoveCmd = command{"documents remove", "documents remove [flags] ID", "removes a trusted GraphQL document", config.Logs | config.Database | config.Migrate}
)

// printCommands prints every command, one a line.
func printCommands(w io.Writer) {
	fmt.Fprint(w, "usage: petstore COMMAND [flags]\n\n")
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, c := range []command{serveCmd, migrateUpCmd, migrateDownCmd, migrateStatusCmd, createCmd, listCmd, revokeCmd, docAddCmd, docListCmd, docRemoveCmd} {
		fmt.Fprintf(tw, "  %s\t%s\n", c.name, c.what)
	}
	fmt.Fprintf(tw, "  version\tprints the version, commit and Go version of the build (also --version)\n")
	fmt.Fprintf(tw, "  help\tprints this (also -h, --help)\n")
	_ = tw.Flush()
	fmt.Fprint(w, "\npetstore COMMAND -h lists the command's flags; each setting is also a variable (--db is PETSTORE_DB).\n")
}

// printHelp prints the help of c, whose flags fs holds.
func printHelp(w io.Writer, c command, fs *flag.FlagSet) {
	fmt.Fprintf(w, "usage: petstore %s\n\n%s.\n\nflags (a flag wins over its variable):\n", c.usage, c.what)
	config.PrintDefaults(w, fs)
}
