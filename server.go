// Command petstore is the pet store service: `petstore serve` runs the HTTP API (REST and
// GraphQL), `petstore migrate` applies the database migrations, and `petstore keys` manages
// API keys. Every setting is an environment variable with a matching flag (package config);
// package app wires the service and runs its commands.
package main

import (
	"os"

	"petstore/app"
)

func main() {
	os.Exit(app.Main(os.Args[1:], os.Environ(), os.Stdout, os.Stderr))
}
