package config

import (
	"errors"
	"flag"
	"fmt"
)

// Parse reads the variables of every setting through getenv, then args, the flags of fs; it
// validates the result. An error of args says that -h lists the flags. Every variable is read and checked whichever groups fs has, so that
// one environment serves every command and a bad value stops `migrate` before a rollout.
func Parse(fs *flag.FlagSet, c *Config, args []string, getenv func(string) string) error {
	env := flag.NewFlagSet("environment", flag.ContinueOnError)
	c.Register(env, All)
	var errs []error
	env.VisitAll(func(f *flag.Flag) {
		name := EnvName(f.Name)
		if v := getenv(name); v != "" {
			if err := env.Set(f.Name, v); err != nil {
				errs = append(errs, fmt.Errorf("%s: %q is %w", name, v, err))
			}
		}
	})
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return fmt.Errorf("%w (-h lists the flags)", err)
	}
	if c.Env == "development" && !isSet(env, "drain-delay") && !isSet(fs, "drain-delay") {
		c.DrainDelay = 0
	}
	var err error
	if c.Tracing, err = TracingFromEnv(getenv); err != nil {
		return err
	}
	return c.Validate()
}

// isSet reports whether fs set the flag name.
func isSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}
