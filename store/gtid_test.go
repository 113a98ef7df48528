package store

import "testing"

func TestGTIDPos(t *testing.T) {
	for _, tc := range []struct {
		pos, target string
		reached     bool
	}{
		{"0-1-42", "0-1-42", true},
		{"0-1-43", "0-1-42", true},
		{"0-1-41", "0-1-42", false},
		{"0-2-50", "0-1-42", true}, // a new primary's server id, the same domain's sequence
		{"0-1-42,1-3-7", "0-1-42,1-3-8", false},
		{"0-1-42", "0-1-42,1-3-1", false},
		{"", "", true},
		{"0-1-1", "", true},
		{"", "0-1-1", false},
	} {
		pos, err1 := parseGTIDPos(tc.pos)
		target, err2 := parseGTIDPos(tc.target)
		if err1 != nil || err2 != nil {
			t.Fatalf("parseGTIDPos(%q, %q): %v, %v", tc.pos, tc.target, err1, err2)
		}
		if got := pos.reached(target); got != tc.reached {
			t.Errorf("%q reached %q: got %v; want %v", tc.pos, tc.target, got, tc.reached)
		}
	}
	for _, bad := range []string{"0-1", "a-1-2", "0-1-2-3", "0-1-x", "-1-1-1"} {
		if _, err := parseGTIDPos(bad); err == nil {
			t.Errorf("parseGTIDPos(%q): got success; want an error", bad)
		}
	}
}
