package observe

import (
	"testing"

	"petstore/auth"
	"petstore/ratelimit"
)

// TestEveryPlanHasItsLabel: each plan auth knows, and the anonymous side, is counted under its
// own name, never as "other".
func TestEveryPlanHasItsLabel(t *testing.T) {
	for _, name := range append(auth.PlanNames, ratelimit.AnonymousPlan) {
		if got := plans[planIndex(name)]; got != name {
			t.Errorf("plan %q: labelled %q", name, got)
		}
	}
	if got := plans[planIndex("platinum")]; got != "other" {
		t.Errorf("an unknown plan: labelled %q; want other", got)
	}
}
