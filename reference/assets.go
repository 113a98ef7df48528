package reference

import "embed"

// files holds the page template, our own script and style sheet, and the vendored Scalar build
// (see vendor/README.md).
//
//go:embed page.html static/*.js static/*.css vendor/*/*.js
var files embed.FS
