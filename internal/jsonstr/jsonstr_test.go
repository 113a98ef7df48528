package jsonstr

import (
	"encoding/json"
	"testing"
)

// FuzzAppend checks that Append writes every string as json.Marshal does, byte for byte.
func FuzzAppend(f *testing.F) {
	for _, s := range []string{"", "Rex", `"q" \b`, "<a&b>", "\x00\x1f\x7f", "\u2028\u2029", "\xff\xfe", "🐶 é", "a\xc3", "Mía — 小虎", "é\xff", "é<"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		if got := Append([]byte("x"), s); string(got) != "x"+string(want) {
			t.Errorf("Append(%q): got %s; want x%s", s, got, want)
		}
	})
}

// BenchmarkAppend writes the names perf/bench seeds (half of them not ASCII).
func BenchmarkAppend(b *testing.B) {
	names := []string{"Rex 1", "Luna 2", "Mía 3", "Félix 4", "Śnieżka 5", "小虎 6", "Max 7", "Bella 8"}
	buf := make([]byte, 0, 256)
	for b.Loop() {
		buf = buf[:0]
		for _, s := range names {
			buf = Append(buf, s)
		}
	}
}
