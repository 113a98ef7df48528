package config_test

import (
	"flag"
	"io"
	"strings"
	"testing"
	"time"

	"petstore/app"
	"petstore/config"
)

// parse returns the settings of env and args over the service's defaults.
func parse(t *testing.T, env map[string]string, args ...string) (config.Config, error) {
	t.Helper()
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	c := app.DefaultConfig()
	c.Register(fs, config.All)
	err := config.Parse(fs, &c, args, func(k string) string { return env[k] })
	return c, err
}

func TestEnvironmentAndFlags(t *testing.T) {
	c, err := parse(t, map[string]string{
		"PETSTORE_DB": "mysql://root:@127.0.0.1:3306/test", "PETSTORE_ADDR": ":9000",
		"PETSTORE_DB_MAX_OPEN": "8", "PETSTORE_KEY_CACHE_TTL": "3s", "PETSTORE_ENV": "production",
	}, "--addr", ":9100")
	if err != nil {
		t.Fatal(err)
	}
	if c.DB != "mysql://root:@127.0.0.1:3306/test" || c.Addr != ":9100" || c.Pool.MaxOpen != 8 || c.KeyCacheTTL != 3*time.Second {
		t.Errorf("got %+v; want the variables, with the flag winning for addr", c)
	}
	if c.Env != "production" {
		t.Errorf("env: got %q; want production", c.Env)
	}
	if d, _ := parse(t, nil); d.Env != "development" || d.DB != "sqlite:petstore.db" || d.Addr != ":8080" {
		t.Errorf("defaults: got %+v", d)
	}
}

func TestReplicas(t *testing.T) {
	c, err := parse(t, map[string]string{"PETSTORE_DB": "mysql://root:@primary:3306/pets",
		"PETSTORE_DB_REPLICAS": "mysql://r:s3cret@a:3306/pets, mysql://r:s3cret@b:3306/pets"})
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Replicas) != 2 || c.Replicas[1] != "mysql://r:s3cret@b:3306/pets" {
		t.Errorf("replicas: got %q; want the two addresses", c.Replicas)
	}
	if logged := c.LogValue().String(); strings.Contains(logged, "s3cret") || !strings.Contains(logged, "b:3306") {
		t.Errorf("logged settings: got %s; want the replicas with their passwords masked", logged)
	}
}

func TestInvalidSettings(t *testing.T) {
	for _, env := range []map[string]string{
		{"PETSTORE_ENV": "prod"}, {"PETSTORE_DB_MAX_OPEN": "0"}, {"PETSTORE_DB_MAX_OPEN": "many"},
		{"PETSTORE_STAGING_URL": "https://staging.example.com/v2"}, {"PETSTORE_SHUTDOWN_TIMEOUT": "0s"},
		{"PETSTORE_LOG_LEVEL": "loud"}, {"PETSTORE_DRAIN_DELAY": "-1s"}, {"PETSTORE_WS_PING_INTERVAL": "10ms"},
		{"PETSTORE_DOCUMENTS": "all"}, {"PETSTORE_GRAPHQL_DEPTH_LIMIT": "deep"},
		{"PETSTORE_DB_REPLICAS": "mysql://r:@replica:3306/pets"}, // with the SQLite default
		{"PETSTORE_DB": "mysql://root:@primary:3306/pets", "PETSTORE_DB_REPLICAS": "mysql://r:@a:3306/pets,sqlite:x.db"},
		{"PETSTORE_DB": "mysql://root:@primary:3306/pets", "PETSTORE_DB_REPLICAS": "mysql://r:p%zz@a:3306/pets"},
		{"PETSTORE_CONTACT_EMAIL": "support"}, {"PETSTORE_CONTACT_EMAIL": "Support <api@example.com>"},
		{"PETSTORE_CONTACT_URL": "example.com/support"}, {"PETSTORE_CONTACT_URL": "mailto:api@example.com"},
	} {
		if _, err := parse(t, env); err == nil {
			t.Errorf("%v: got success; want an error", env)
		}
	}
}

// TestContact: the contact of the OpenAPI document is the deploying organisation's, set by
// PETSTORE_CONTACT_EMAIL and PETSTORE_CONTACT_URL; a bad value names its variable and an
// example of a good one.
func TestContact(t *testing.T) {
	if c, err := parse(t, nil); err != nil || c.ContactEmail != "api@petstore.example" || c.ContactURL != "" {
		t.Errorf("defaults: got %q %q (%v); want api@petstore.example and no URL", c.ContactEmail, c.ContactURL, err)
	}
	c, err := parse(t, map[string]string{"PETSTORE_CONTACT_EMAIL": "api@example.com"}, "--contact-url", "https://example.com/support")
	if err != nil || c.ContactEmail != "api@example.com" || c.ContactURL != "https://example.com/support" {
		t.Errorf("got %q %q (%v); want the variable's email and the flag's URL", c.ContactEmail, c.ContactURL, err)
	}
	for name, want := range map[string]string{
		"PETSTORE_CONTACT_EMAIL": `PETSTORE_CONTACT_EMAIL must be an email address (e.g. api@petstore.example); got "support"`,
		"PETSTORE_CONTACT_URL":   `PETSTORE_CONTACT_URL must be an absolute http or https URL (e.g. https://petstore.example/support); got "support"`,
	} {
		if _, err := parse(t, map[string]string{name: "support"}); err == nil || err.Error() != want {
			t.Errorf("%s=support: got %v; want %s", name, err, want)
		}
	}
}

// TestDrainDelay checks the drain delay's defaults: none in development, so that Ctrl-C stops
// at once, the default (5s) elsewhere, and what a variable or flag says in either.
func TestDrainDelay(t *testing.T) {
	for _, tt := range []struct {
		name string
		env  map[string]string
		args []string
		want time.Duration
	}{
		{"development", nil, nil, 0},
		{"production", map[string]string{"PETSTORE_ENV": "production"}, nil, 5 * time.Second},
		{"staging", map[string]string{"PETSTORE_ENV": "staging"}, nil, 5 * time.Second},
		{"development variable", map[string]string{"PETSTORE_DRAIN_DELAY": "2s"}, nil, 2 * time.Second},
		{"development flag", nil, []string{"--drain-delay", "3s"}, 3 * time.Second},
		{"production zero", map[string]string{"PETSTORE_ENV": "production", "PETSTORE_DRAIN_DELAY": "0s"}, nil, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c, err := parse(t, tt.env, tt.args...)
			if err != nil {
				t.Fatal(err)
			}
			if c.DrainDelay != tt.want {
				t.Errorf("got %v; want %v", c.DrainDelay, tt.want)
			}
		})
	}
}

// TestParseReadsTracing checks that Parse sets Tracing, and refuses what TracingFromEnv refuses.
func TestParseReadsTracing(t *testing.T) {
	if c, err := parse(t, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}); err != nil || !c.Tracing {
		t.Errorf("with an endpoint: got Tracing %v, %v; want true", c.Tracing, err)
	}
	if c, err := parse(t, nil); err != nil || c.Tracing {
		t.Errorf("without: got Tracing %v, %v; want false", c.Tracing, err)
	}
	if _, err := parse(t, map[string]string{"OTEL_TRACES_SAMPLER": "sometimes"}); err == nil {
		t.Error("an unknown sampler: got no error")
	}
}
