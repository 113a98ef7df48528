package config_test

import (
	"flag"
	"slices"
	"strings"
	"testing"
	"time"

	"petstore/config"
)

func TestWebhookSettings(t *testing.T) {
	d, err := parse(t, nil)
	if err != nil {
		t.Fatal(err)
	}
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	d.Register(fs, config.All)
	if got := fs.Lookup("webhook-retry-schedule").DefValue; got != "5s,5m,30m,2h,5h,10h,10h" || d.Webhooks.AllowPrivate || d.Webhooks.Timeout != 15*time.Second {
		t.Errorf("defaults: got schedule %s, %+v", got, d.Webhooks)
	}
	c, err := parse(t, map[string]string{"PETSTORE_WEBHOOK_RETRY_SCHEDULE": " 1s, 90s ,", "PETSTORE_WEBHOOK_ALLOW_PRIVATE": "true"})
	if err != nil || !slices.Equal(c.Webhooks.Schedule, []time.Duration{time.Second, 90 * time.Second}) || !c.Webhooks.AllowPrivate {
		t.Errorf("got %+v, %v; want 1s,1m30s and private addresses allowed", c.Webhooks, err)
	}
	for value, want := range map[string]string{"5s,soon": "durations", "5s,-1s": "positive"} {
		if _, err := parse(t, map[string]string{"PETSTORE_WEBHOOK_RETRY_SCHEDULE": value}); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: got %v; want an error saying %s", value, err, want)
		}
	}
	if _, err := parse(t, map[string]string{"PETSTORE_WEBHOOK_TIMEOUT": "0s"}); err == nil {
		t.Error("a zero timeout: got no error")
	}
}
