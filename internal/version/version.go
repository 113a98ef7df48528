// Package version names the build that runs: its version and the commit it was built from,
// for `petstore --version`, the start-up log line and the petstore_build_info metric. The
// Makefile stamps both with -ldflags (-X petstore/internal/version.version=... and
// .commit=...); a build without them reports what the Go toolchain recorded, or "unknown".
package version

import (
	"runtime"
	"runtime/debug"
)

// Stamped by the linker (see the package doc).
var version, commit string

// Version returns the build's version: `git describe` at build time (a tag, or a commit and
// "-dirty" when the tree had changes), else the module version the toolchain recorded
// ("(devel)" for a build from a checkout), else "unknown".
func Version() string {
	if version != "" {
		return version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		return bi.Main.Version
	}
	return "unknown"
}

// Commit returns the commit the build was made from, else "unknown".
func Commit() string {
	if commit != "" {
		return commit
	}
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" {
				return s.Value
			}
		}
	}
	return "unknown"
}

// String returns the line `petstore --version` prints: "petstore VERSION (commit COMMIT, GO)".
func String() string {
	return "petstore " + Version() + " (commit " + Commit() + ", " + runtime.Version() + ")"
}
