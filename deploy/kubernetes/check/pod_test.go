package check

import (
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"
)

// subscriberWrites is how long the last writes to stalled WebSocket and SSE subscribers may
// take at shutdown: conns.RegistryOptions.WriteTimeout's default, which no variable changes.
const subscriberWrites = 10 * time.Second

// TestGracePeriod: SIGKILL comes after the worst-case shutdown: the drain delay, then the last
// writes to stalled subscribers, then the wait for the requests in flight.
func TestGracePeriod(t *testing.T) {
	m := load(t)
	c := container(t, m)
	duration := func(name string, def time.Duration) time.Duration {
		v := env(c, name)
		if v == "" {
			return def // the service's default (app.DefaultConfig)
		}
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return d
	}
	worst := duration("PETSTORE_DRAIN_DELAY", 5*time.Second) + subscriberWrites + duration("PETSTORE_SHUTDOWN_TIMEOUT", 20*time.Second)
	g := m.deployment.Spec.Template.Spec.TerminationGracePeriodSeconds
	if g == nil || time.Duration(*g)*time.Second <= worst {
		t.Errorf("terminationGracePeriodSeconds must exceed the worst-case shutdown of %v", worst)
	}
}

// TestHardening: the settings the issue asked for stay.
func TestHardening(t *testing.T) {
	m := load(t)
	spec := m.deployment.Spec.Template.Spec
	c := container(t, m)
	if spec.AutomountServiceAccountToken == nil || *spec.AutomountServiceAccountToken {
		t.Error("automountServiceAccountToken must be false: the service calls no Kubernetes API")
	}
	if spec.SecurityContext == nil || spec.SecurityContext.RunAsNonRoot == nil || !*spec.SecurityContext.RunAsNonRoot {
		t.Error("runAsNonRoot must be true")
	}
	hardened(t, "the container", c)

	// Secret references: the Secret of the example has every key, and only redis-url is optional.
	for _, e := range c.Env {
		if e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil {
			continue
		}
		ref := e.ValueFrom.SecretKeyRef
		if ref.Name != m.secret.Name {
			t.Errorf("%s: from Secret %s, not %s", e.Name, ref.Name, m.secret.Name)
		}
		if _, ok := m.secret.StringData[ref.Key]; !ok {
			t.Errorf("%s: the example Secret has no key %s", e.Name, ref.Key)
		}
		optional := ref.Optional != nil && *ref.Optional
		if want := e.Name == "PETSTORE_REDIS_URL"; optional != want {
			t.Errorf("%s: optional is %v; want %v (Redis is optional in the service, the database is not)", e.Name, optional, want)
		}
	}

	// The public URL advertises the Ingress's host, over TLS.
	u, err := url.Parse(env(c, "PETSTORE_PUBLIC_URL"))
	if err != nil || u.Scheme != "https" || !strings.HasSuffix(u.Path, "/v1") {
		t.Fatalf("PETSTORE_PUBLIC_URL %q: want https://HOST/v1", env(c, "PETSTORE_PUBLIC_URL"))
	}
	for _, r := range m.ingress.Spec.Rules {
		if r.Host != u.Host {
			t.Errorf("Ingress host %q is not PETSTORE_PUBLIC_URL's %q", r.Host, u.Host)
		}
	}
	if len(m.ingress.Spec.TLS) == 0 || !slices.Contains(m.ingress.Spec.TLS[0].Hosts, u.Host) {
		t.Errorf("Ingress: no TLS for %s", u.Host)
	}
}
