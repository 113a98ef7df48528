package config

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"time"
)

// setting is the flag.Value of a setting: the flag package's own, whose errors say "parse
// error" where this one says what the value must be ("not a duration (e.g. 5s, 250ms, 1m)").
type setting struct {
	flag.Value
	kind string // for -h: duration, int, string, level, list; "" for a boolean
	want string // what a value must be; "" when any value will do
}

// newSetting wraps v, a value of the flag package's own or a flag.Func.
func newSetting(v flag.Value) *setting {
	s := &setting{Value: v, kind: "list"} // flag.Func's values have no Get
	if g, ok := v.(flag.Getter); ok {
		switch g.Get().(type) {
		case time.Duration:
			s.kind, s.want = "duration", "a duration (e.g. 5s, 250ms, 1m)"
		case int, int64:
			s.kind, s.want = "int", "a whole number (e.g. 16)"
		case bool:
			s.kind, s.want = "", "true or false"
		case *slog.Level:
			s.kind, s.want = "level", "debug, info, warn or error"
		default:
			s.kind = "string"
		}
	}
	return s
}

// Set sets the value, or says what it must be.
func (s *setting) Set(v string) error {
	err := s.Value.Set(v)
	if err == nil || s.want == "" {
		return err
	}
	if _, perr := strconv.ParseInt(v, 0, 64); s.kind == "int" && errors.Is(perr, strconv.ErrRange) {
		return errors.New("out of range")
	}
	return errors.New("not " + s.want)
}

// IsBoolFlag lets a boolean setting's flag go without a value, as the flag package's own.
func (s *setting) IsBoolFlag() bool {
	b, ok := s.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}

// PrintDefaults prints the flags of fs as flag.PrintDefaults does, with each setting's
// variable: "-db-timeout duration ... (PETSTORE_DB_TIMEOUT) (default 5s)".
func PrintDefaults(w io.Writer, fs *flag.FlagSet) {
	fs.VisitAll(func(f *flag.Flag) {
		kind, usage := flag.UnquoteUsage(f)
		if s, ok := f.Value.(*setting); ok {
			kind, usage = s.kind, usage+" ("+EnvName(f.Name)+")"
		}
		line := "  -" + f.Name
		if kind != "" {
			line += " " + kind
		}
		line += "\n    \t" + usage
		switch f.DefValue {
		case "", "0", "0s", "false":
		default:
			if kind == "string" {
				line += fmt.Sprintf(" (default %q)", f.DefValue)
			} else {
				line += fmt.Sprintf(" (default %s)", f.DefValue)
			}
		}
		fmt.Fprintln(w, line)
	})
}
