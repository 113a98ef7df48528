package config

import (
	"errors"
	"flag"
	"fmt"
	"strings"
	"time"
)

// Webhooks are the settings of webhook deliveries.
type Webhooks struct {
	Schedule     []time.Duration // waits before each retry of a failed delivery
	Timeout      time.Duration   // a receiver's 2xx must come within it
	AllowPrivate bool            // deliveries may go to private addresses, and over plain http
	SecretGrace  time.Duration   // how long a rotated secret still signs
	Deliver      bool            // this instance runs a dispatcher: queues and sends deliveries
}

// webhookFlags defines the flags of the webhook settings (the Server group).
func (c *Config) webhookFlags(fs *flag.FlagSet) {
	w := &c.Webhooks
	fs.Var((*durationList)(&w.Schedule), "webhook-retry-schedule", "comma-separated waits before each retry of a failed webhook delivery; after the last the delivery has failed, and an endpoint failing for the whole schedule is disabled")
	fs.DurationVar(&w.Timeout, "webhook-timeout", w.Timeout, "how long a webhook receiver may take to answer a delivery with a 2xx")
	fs.BoolVar(&w.AllowPrivate, "webhook-allow-private", w.AllowPrivate, "let webhook endpoints be private, loopback or link-local addresses, over plain http too: development and tests only")
	fs.DurationVar(&w.SecretGrace, "webhook-secret-grace", w.SecretGrace, "how long a rotated webhook secret still signs each delivery beside the new one")
	fs.BoolVar(&w.Deliver, "webhook-deliver", w.Deliver, "queue and send webhook deliveries from this instance; false leaves them to the instances where it is true, of which one at least must run")
}

// validate reports the first webhook setting that cannot work.
func (w Webhooks) validate() error {
	for _, d := range w.Schedule {
		if d <= 0 {
			return errors.New("PETSTORE_WEBHOOK_RETRY_SCHEDULE: every wait must be positive")
		}
	}
	if w.Timeout <= 0 || w.SecretGrace < 0 {
		return errors.New("PETSTORE_WEBHOOK_TIMEOUT must be positive and PETSTORE_WEBHOOK_SECRET_GRACE not negative")
	}
	return nil
}

// durationList is a comma-separated list of durations ("5s,5m,30m").
type durationList []time.Duration

// String returns the list as Set reads it.
func (l *durationList) String() string {
	if l == nil {
		return ""
	}
	s := make([]string, len(*l))
	for i, d := range *l {
		s[i] = d.String()
		if strings.HasSuffix(s[i], "m0s") {
			s[i] = strings.TrimSuffix(s[i], "0s")
		}
		if strings.HasSuffix(s[i], "h0m") {
			s[i] = strings.TrimSuffix(s[i], "0m")
		}
	}
	return strings.Join(s, ",")
}

// Set reads a comma-separated list of durations.
func (l *durationList) Set(v string) error {
	var out []time.Duration
	for item := range strings.SplitSeq(v, ",") {
		if item = strings.TrimSpace(item); item == "" {
			continue
		}
		d, err := time.ParseDuration(item)
		if err != nil {
			return fmt.Errorf("not a comma-separated list of durations (e.g. 5s,5m,30m): %q", item)
		}
		out = append(out, d)
	}
	*l = out
	return nil
}

// Get returns the list, for the flag package.
func (l *durationList) Get() any { return []time.Duration(*l) }
