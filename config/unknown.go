package config

import (
	"flag"
	"strings"
)

// Unknown is a PETSTORE_ variable of the environment that names no setting: a typo, or a
// setting of another version.
type Unknown struct {
	Name  string // PETSTORE_DBB
	Meant string // the variable of the setting closest to Name, PETSTORE_DB; empty when none is close
}

// String says what u is, for a log line.
func (u Unknown) String() string {
	s := u.Name + " is not a setting; it is ignored"
	if u.Meant != "" {
		s += " (did you mean " + u.Meant + "?)"
	}
	return s
}

// notSettings are the PETSTORE_ variables read by other programs than the service, which may
// share its environment: the tests (PETSTORE_TEST_*) and the load generator of perf/.
var notSettings = []string{"PETSTORE_TEST_", "PETSTORE_KEY="}

// UnknownVariables returns the variables of environ (os.Environ's form, KEY=VALUE) that start
// with PETSTORE_, are not empty, and name no setting nor a variable of notSettings.
func UnknownVariables(environ []string) []Unknown {
	known := map[string]bool{}
	fs := flag.NewFlagSet("", flag.ContinueOnError)
	var c Config // the names alone matter
	c.Register(fs, All)
	fs.VisitAll(func(f *flag.Flag) { known[EnvName(f.Name)] = true })
	var unknown []Unknown
	for _, kv := range environ {
		name, value, _ := strings.Cut(kv, "=")
		if !strings.HasPrefix(name, "PETSTORE_") || value == "" || known[name] || other(kv) {
			continue
		}
		unknown = append(unknown, Unknown{Name: name, Meant: closest(name, known)})
	}
	return unknown
}

// other reports whether kv is a variable of notSettings.
func other(kv string) bool {
	for _, prefix := range notSettings {
		if strings.HasPrefix(kv, prefix) {
			return true
		}
	}
	return false
}

// closest returns the name of known nearest to name by edit distance, when a typo could
// explain the difference: at most two edits, and at most half the name's own letters.
func closest(name string, known map[string]bool) string {
	best, bestDist := "", 3
	suffix := strings.ToUpper(strings.TrimPrefix(name, "PETSTORE_"))
	for k := range known {
		ks := strings.TrimPrefix(k, "PETSTORE_")
		d := distance(suffix, ks)
		if 2*d > len(ks) {
			continue
		}
		if d < bestDist || d == bestDist && k < best {
			best, bestDist = k, d
		}
	}
	return best
}

// distance returns the Levenshtein distance of a and b: the fewest insertions, deletions and
// substitutions of bytes that turn a into b.
func distance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			sub := prev[j-1]
			if a[i-1] != b[j-1] {
				sub++
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, sub)
		}
		prev = cur
	}
	return prev[len(b)]
}
