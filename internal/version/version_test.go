package version

import (
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
)

func TestStamped(t *testing.T) {
	defer func(v, c string) { version, commit = v, c }(version, commit)
	version, commit = "v1.2.3", "0123abcd"
	if got, want := String(), "petstore v1.2.3 (commit 0123abcd, "+runtime.Version()+")"; got != want {
		t.Errorf("String: got %q; want %q", got, want)
	}
}

func TestUnstamped(t *testing.T) {
	defer func(v, c string) { version, commit = v, c }(version, commit)
	version, commit = "", ""
	if Version() == "" || Commit() == "" || !strings.HasPrefix(String(), "petstore ") {
		t.Errorf("unstamped: version %q, commit %q, line %q; want something for each", Version(), Commit(), String())
	}
}

// TestRecorded: an unstamped build reports the module version and the VCS revision that the Go
// toolchain recorded (go build in a clone, go run -buildvcs=true), and "unknown" without them.
func TestRecorded(t *testing.T) {
	bi := &debug.BuildInfo{Main: debug.Module{Version: "v0.0.0-20261129033129-5f63c4d93720"},
		Settings: []debug.BuildSetting{{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: "5f63c4d93720ab98b4a9a2740a1a1be6d565faf8"}}}
	if v, c := recordedVersion(bi), recordedCommit(bi); v != bi.Main.Version || c != bi.Settings[1].Value {
		t.Errorf("recorded: version %q, commit %q; want the build information's", v, c)
	}
	none := &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}
	if v, c := recordedVersion(none), recordedCommit(none); v != "(devel)" || c != "unknown" {
		t.Errorf("without VCS information: version %q, commit %q; want (devel) and unknown", v, c)
	}
	if v, c := recordedVersion(nil), recordedCommit(nil); v != "unknown" || c != "unknown" {
		t.Errorf("without build information: version %q, commit %q; want unknown", v, c)
	}
}
