package app

import (
	"strings"
	"testing"
)

// TestPartSettings: the defaults pass; a setting that a part's own rules refuse (the
// Idempotency-Key records', the rate limiter's, the trusted proxies', the plans') stops a
// command as a value that config refuses does, before anything is opened, naming its variable.
func TestPartSettings(t *testing.T) {
	if _, _, err := (runner{}).settings(serveCmd, nil, nil); err != nil {
		t.Fatalf("defaults: got %v; want no error", err)
	}
	for _, tt := range []struct {
		env  []string
		want string
	}{
		{[]string{"PETSTORE_IDEMPOTENCY_TTL=1h"}, "PETSTORE_IDEMPOTENCY_TTL: "},
		{[]string{"PETSTORE_ANON_PER_MINUTE=0"}, "rate limits: AnonymousPerMinute must be at least 1"},
		{[]string{"PETSTORE_SUSPEND_BASE=2h", "PETSTORE_SUSPEND_MAX=1h"}, "rate limits: SuspendMax must be at least SuspendBase"},
		{[]string{"PETSTORE_TRUSTED_PROXIES=10.0.0.0/33"}, "PETSTORE_TRUSTED_PROXIES: "},
		{[]string{"PETSTORE_DEV_KEY_PLAN=enterprise"}, `PETSTORE_DEV_KEY_PLAN must be free, pro or business; got "enterprise"`},
	} {
		_, _, err := runner{environ: tt.env}.settings(serveCmd, nil, nil)
		if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
			t.Errorf("%v: got %v; want an error starting %q", tt.env, err, tt.want)
		}
	}
}
