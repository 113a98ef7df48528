package version

import (
	"runtime"
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
