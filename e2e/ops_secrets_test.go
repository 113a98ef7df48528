package e2e

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"sync"
	"testing"

	"petstore/app"
	"petstore/testkit/dbtest"
)

// hostilePasswords do not survive url.Parse unescaped; their pieces between special characters
// are distinct, so that a test can tell that no part of one leaked.
var hostilePasswords = []string{"Zq7/Xk9", "Wm4#Rt2", "Yp6?Lb3", "Hd5%Gn8", "Fc2@Vs6", "Ku1/Ee4?Oo5#Ii6@Aa7%2F", "Bb1 Cc2", "Gg5//Hh6@@"}

// passwordPieces returns the parts of password at least three bytes long between its special
// characters.
func passwordPieces(password string) []string {
	var out []string
	for _, p := range strings.FieldsFunc(password, func(r rune) bool { return strings.ContainsRune("/#?%@ ", r) }) {
		if len(p) >= 3 {
			out = append(out, p)
		}
	}
	return out
}

// cancelOn is an output that cancels a context once it has been sent a line containing mark.
type cancelOn struct {
	mu     sync.Mutex
	buf    bytes.Buffer
	mark   string
	cancel context.CancelFunc
}

func (w *cancelOn) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	if strings.Contains(w.buf.String(), w.mark) {
		w.cancel()
	}
	return len(p), nil
}

// TestPasswordsNeverLeak runs the real command with hostile passwords in PETSTORE_DB and
// PETSTORE_REDIS_URL: whether it refuses the address, fails to connect or serves, no piece of
// the password appears in its output, its log lines or its error.
func TestPasswordsNeverLeak(t *testing.T) {
	sqlite := dbtest.DSN(t, "sqlite")
	for _, password := range hostilePasswords {
		for _, env := range []map[string]string{
			{"PETSTORE_DB": "mysql://app:" + password + "@127.0.0.1:1/pets"},
			{"PETSTORE_DB": "mysql://app:" + password + "@127.0.0.1:1/pets?password=" + password},
			{"PETSTORE_DB": sqlite, "PETSTORE_REDIS_URL": "redis://:" + password + "@127.0.0.1:1/0"},
			{"PETSTORE_DB": sqlite, "PETSTORE_REDIS_URL": "redis://default:" + password + "@127.0.0.1:1"},
		} {
			env["PETSTORE_ADDR"] = "127.0.0.1:0"
			ctx, cancel := context.WithCancel(context.Background())
			stdout := &cancelOn{mark: "petstore listening", cancel: cancel}
			var stderr bytes.Buffer
			err := app.Run(ctx, []string{"serve"}, environ(env), stdout, &stderr)
			cancel()
			out := stdout.buf.String() + stderr.String()
			if err != nil {
				out += err.Error()
			}
			for _, p := range passwordPieces(password) {
				if strings.Contains(out, p) {
					t.Errorf("%v: the output shows %q of the password:\n%s", env, p, out)
				}
			}
		}
	}
}

// TestPasswordsNeverLeakFromAnyCommand: no command, flag or driver's error leaks a password. Every
// command, with the address in its variable or its flag, against a server that refuses the
// password, demands TLS it does not speak, or is not there (MySQL; Redis over TCP, TLS and a Unix
// socket); no piece of the password appears.
func TestPasswordsNeverLeakFromAnyCommand(t *testing.T) {
	mysqlDSN, sqlite := dbtest.DSN(t, "mysql"), dbtest.DSN(t, "sqlite")
	hostPort := strings.TrimPrefix(mysqlDSN[strings.LastIndexByte(mysqlDSN, '@'):], "@")
	hostPort = hostPort[:strings.IndexByte(hostPort, '/')]
	const password = "Qx3%2FJv8" // Qx3/Jv8, escaped
	var dbs, redises []string
	for _, suffix := range []string{"", "?tls=true", "?tls=skip-verify", "?allowCleartextPasswords=true"} {
		dbs = append(dbs, "mysql://nobody:"+password+"@"+hostPort+"/pets"+suffix)
	}
	for _, u := range []string{"redis://:%s@127.0.0.1:1/0", "rediss://:%s@127.0.0.1:1/0", "redis://nobody:%s@127.0.0.1:1/0",
		"unix://:%s@/nonexistent/redis.sock?db=0", "redis://:%s@127.0.0.1:1/x"} {
		redises = append(redises, strings.Replace(u, "%s", password, 1))
	}
	var runs [][]string // a command, then the variables it runs with, as NAME=VALUE
	for _, db := range dbs {
		for _, cmd := range [][]string{{"migrate"}, {"keys", "list"}, {"keys", "create", "--plan", "free"}, {"keys", "revoke", "1"}, {"serve"}} {
			runs = append(runs, append(cmd, "--", "PETSTORE_DB="+db), append(slices.Clone(cmd), "--db", db, "--"))
		}
	}
	for _, r := range redises {
		runs = append(runs, []string{"serve", "--", "PETSTORE_DB=" + sqlite, "PETSTORE_REDIS_URL=" + r},
			[]string{"serve", "--redis-url", r, "--", "PETSTORE_DB=" + sqlite})
	}
	for _, r := range runs {
		i := slices.Index(r, "--")
		args, env := r[:i], map[string]string{"PETSTORE_ADDR": "127.0.0.1:0"}
		for _, kv := range r[i+1:] {
			k, v, _ := strings.Cut(kv, "=")
			env[k] = v
		}
		ctx, cancel := context.WithCancel(context.Background())
		stdout := &cancelOn{mark: "petstore listening", cancel: cancel}
		var stderr bytes.Buffer
		err := app.Run(ctx, args, environ(env), stdout, &stderr)
		cancel()
		out := stdout.buf.String() + stderr.String()
		if err != nil {
			out += err.Error()
		}
		for _, p := range []string{"Qx3", "Jv8"} {
			if strings.Contains(out, p) {
				t.Errorf("%v: the output shows %q of the password:\n%s", r, p, out)
			}
		}
	}
}
