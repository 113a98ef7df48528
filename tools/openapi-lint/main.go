// Command openapi-lint writes the OpenAPI document as the service serves it with the default
// settings (servers and contact from app.DefaultConfig), indented so that the linters' line
// numbers are readable, to the file named by its one argument. run.sh lints that file.
package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"

	"petstore/app"
	"petstore/rest"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: openapi-lint FILE")
		os.Exit(2)
	}
	if err := write(os.Args[1]); err != nil {
		fmt.Fprintln(os.Stderr, "openapi-lint:", err)
		os.Exit(1)
	}
}

// write writes the served document, indented, to file.
func write(file string) error {
	cfg := app.DefaultConfig()
	doc, err := rest.OpenAPIDocument(cfg.PublicURL, cfg.StagingURL, rest.Contact{Email: cfg.ContactEmail, URL: cfg.ContactURL})
	if err != nil {
		return err
	}
	var out bytes.Buffer
	if err := json.Indent(&out, doc, "", "  "); err != nil {
		return err
	}
	out.WriteByte('\n')
	return os.WriteFile(file, out.Bytes(), 0o644)
}
