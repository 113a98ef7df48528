// Package version names the build that runs: its version and the commit it was built from,
// for `petstore --version`, the start-up log line and the petstore_build_info metric. The
// Makefile stamps both with -ldflags (-X petstore/internal/version.version=... and
// .commit=...); a build without them reports what the Go toolchain recorded, or "unknown".
// `go build` in a clone records the module version it derives from the commit and the commit
// (vcs.revision); `go run` records them only with -buildvcs=true; neither reads a git worktree.
package version

import (
	"runtime"
	"runtime/debug"
)

// Stamped by the linker (see the package doc).
var version, commit string

// Version returns the build's version: `git describe` at build time (a tag, or a commit and
// "-dirty" when the tree had changes), else the module version the toolchain recorded
// ("(devel)" for a build from a checkout without VCS information), else "unknown".
func Version() string {
	if version != "" {
		return version
	}
	bi, _ := debug.ReadBuildInfo()
	return recordedVersion(bi)
}

// Commit returns the commit the build was made from, else "unknown".
func Commit() string {
	if commit != "" {
		return commit
	}
	bi, _ := debug.ReadBuildInfo()
	return recordedCommit(bi)
}

// recordedVersion returns the main module's version in bi, "unknown" when bi is nil or has
// none.
func recordedVersion(bi *debug.BuildInfo) string {
	if bi != nil && bi.Main.Version != "" {
		return bi.Main.Version
	}
	return "unknown"
}

// recordedCommit returns the VCS revision in bi, "unknown" when bi is nil or has none.
func recordedCommit(bi *debug.BuildInfo) string {
	if bi != nil {
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
