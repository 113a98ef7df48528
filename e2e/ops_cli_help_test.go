package e2e

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"petstore/app"
)

// mainWith runs app.Main with args and env and returns its exit status, stdout and stderr.
func mainWith(env []string, args ...string) (code int, stdout, stderr string) {
	var out, errs bytes.Buffer
	code = app.Main(args, env, &out, &errs)
	return code, out.String(), errs.String()
}

// TestHelp: petstore --help, -h and help print every command, one a line, to stdout and exit
// 0; no command, or an unknown one, prints them to stderr and exits 2.
func TestHelp(t *testing.T) {
	commands := []string{"\n  serve ", "\n  migrate ", "\n  keys create ", "\n  keys list ", "\n  keys revoke ", "\n  version ", "\n  help "}
	for _, arg := range []string{"--help", "-h", "help"} {
		code, out, _ := mainWith(nil, arg)
		for _, c := range commands {
			if code != 0 || !strings.Contains(out, c) {
				t.Errorf("petstore %s: got %d and\n%s\nwant 0 and a line for %q", arg, code, out, strings.TrimSpace(c))
			}
		}
	}
	for _, args := range [][]string{{}, {"nonsense"}, {"keys"}, {"keys", "nonsense"}} {
		code, out, errs := mainWith(nil, args...)
		if code != 2 || out != "" || !strings.Contains(errs, "\n  keys create ") {
			t.Errorf("petstore %q: got %d, stdout %q, stderr\n%s\nwant 2 and the commands on stderr", args, code, out, errs)
		}
	}
}

// TestCommandFlags: each command's -h lists its own flags, each setting's with its variable,
// and not the settings of serve that it does not read.
func TestCommandFlags(t *testing.T) {
	for _, tt := range []struct {
		args       []string
		want, not  []string
		wantInHelp string
	}{
		{[]string{"keys", "create", "-h"}, []string{"-plan string", "-per-minute int", "-per-day int", "-name string", "-db string", "-env string",
			"-db-timeout duration", "(PETSTORE_DB_TIMEOUT)", "(PETSTORE_DB)"}, []string{"-addr", "-redis-url", "-key-cache-ttl"}, "keys create --plan PLAN"},
		{[]string{"keys", "list", "-h"}, []string{"-db string", "-log-level"}, []string{"-addr", "-env", "-plan"}, "keys list"},
		{[]string{"keys", "revoke", "-h"}, []string{"-db string", "-key-cache-ttl duration", "(PETSTORE_KEY_CACHE_TTL)"}, []string{"-addr", "-plan"}, "keys revoke"},
		{[]string{"migrate", "-h"}, []string{"-db string", "-db-max-open int"}, []string{"-addr", "-env", "-redis-url"}, "migrate"},
		{[]string{"serve", "-h"}, []string{"-addr string", "-redis-url", "-db string", "-dev-key-plan string", "-ratelimit-fail-open\n",
			"(PETSTORE_CORS_ORIGINS)", `(default ":8080")`}, []string{"-plan"}, "serve"},
	} {
		code, out, _ := mainWith(nil, tt.args...)
		if code != 0 || !strings.Contains(out, "usage: petstore "+tt.wantInHelp) {
			t.Errorf("%q: got %d and\n%s\nwant 0 and the command's usage", tt.args, code, out)
		}
		for _, w := range tt.want {
			if !strings.Contains(out, w) {
				t.Errorf("%q: no %q in\n%s", tt.args, w, out)
			}
		}
		for _, n := range tt.not {
			if strings.Contains(out, "  "+n+" ") {
				t.Errorf("%q: lists %s, which it does not read:\n%s", tt.args, n, out)
			}
		}
	}
}

// TestSettingErrors: a value that does not parse names its variable and what it must be, and
// a SQLite database in a missing directory says so.
func TestSettingErrors(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "no", "such")
	for env, want := range map[string]string{
		"PETSTORE_DB_TIMEOUT=fast":                   `PETSTORE_DB_TIMEOUT: "fast" is not a duration (e.g. 5s, 250ms, 1m)`,
		"PETSTORE_DB_MAX_OPEN=lots":                  `PETSTORE_DB_MAX_OPEN: "lots" is not a whole number`,
		"PETSTORE_RATELIMIT_FAIL_OPEN=mebe":          `PETSTORE_RATELIMIT_FAIL_OPEN: "mebe" is not true or false`,
		"PETSTORE_LOG_LEVEL=loud":                    `PETSTORE_LOG_LEVEL: "loud" is not debug, info, warn or error`,
		"PETSTORE_DB=sqlite:" + missing + "/pets.db": "PETSTORE_DB: the directory " + missing + " does not exist",
	} {
		err := app.Run(context.Background(), []string{"migrate"}, []string{env}, &bytes.Buffer{}, &bytes.Buffer{})
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: got %v; want %s", env, err, want)
		}
	}
	err := app.Run(context.Background(), []string{"migrate", "--db-timeout", "fast"}, nil, &bytes.Buffer{}, &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), "not a duration (e.g. 5s, 250ms, 1m)") {
		t.Errorf("--db-timeout fast: got %v; want it to say what a duration is", err)
	}
	err = app.Run(context.Background(), []string{"keys", "list", "--addr", ":1"}, nil, &bytes.Buffer{}, &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), "-h lists the flags") {
		t.Errorf("keys list --addr: got %v; want an error that points to -h", err)
	}
}

// TestUnknownVariables: a PETSTORE_ variable that names no setting is logged as a warning, with
// the setting it probably meant, and the command runs; the tests' and perf's own are not.
func TestUnknownVariables(t *testing.T) {
	var stderr bytes.Buffer
	env := []string{"PETSTORE_DB=sqlite:" + filepath.Join(t.TempDir(), "u.db"), "PETSTORE_DBB=x", "PETSTORE_QWERTYUIOP=1",
		"PETSTORE_TEST_WHATEVER=1", "PETSTORE_KEY=petstore_test_x"}
	if err := app.Run(context.Background(), []string{"migrate"}, env, &bytes.Buffer{}, &stderr); err != nil {
		t.Fatal(err)
	}
	logs := stderr.String()
	for _, want := range []string{`"level":"WARN","msg":"PETSTORE_DBB is not a setting; it is ignored (did you mean PETSTORE_DB?)","variable":"PETSTORE_DBB","meant":"PETSTORE_DB"}`,
		`"variable":"PETSTORE_QWERTYUIOP"}`} {
		if !strings.Contains(logs, want) {
			t.Errorf("no %s in the logs:\n%s", want, logs)
		}
	}
	for _, not := range []string{"PETSTORE_TEST_WHATEVER", "PETSTORE_KEY"} {
		if strings.Contains(logs, not) {
			t.Errorf("a warning for %s, which the tests or perf read:\n%s", not, logs)
		}
	}
	if !strings.Contains(logs, `"db_timeout":"5s"`) || !strings.Contains(logs, `"key_cache_ttl":"10s"`) {
		t.Errorf("start-up log line: want durations as text (\"5s\"):\n%s", logs)
	}
}
