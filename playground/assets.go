package playground

import "embed"

// files holds the page template, our own script and style sheet, and the vendored GraphiQL and
// React builds (see vendor/README.md).
//
//go:embed page.html static/*.js static/*.css vendor/*/*.js vendor/*/*.css
var files embed.FS
