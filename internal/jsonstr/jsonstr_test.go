package jsonstr

import (
	"encoding/json"
	"testing"
)

var cases = []string{
	"", "pet1", "Rex the dog", "a\"b", `back\slash`, "<script>", "a&b", "tab\there", "\x00\x1f\x7f",
	"héllo", "日本", "\u2028\u2029", "bad \xff utf-8", "\xed\xa0\x80", "~ printable !#$%'()*+,-./:;=?@[]^_`{|}",
}

// TestAppend checks Append against json.Marshal on strings of every kind, after a prefix that
// it must keep.
func TestAppend(t *testing.T) {
	for _, s := range cases {
		want, _ := json.Marshal(s)
		if got := Append([]byte("x"), s); string(got) != "x"+string(want) {
			t.Errorf("Append(%q) = %s; want x%s", s, got, want)
		}
	}
}

// TestAppendAllocs: a plain name costs no allocation beyond the buffer's growth.
func TestAppendAllocs(t *testing.T) {
	buf := make([]byte, 0, 64)
	if n := testing.AllocsPerRun(100, func() { buf = Append(buf[:0], "Rex the dog") }); n != 0 {
		t.Errorf("Append of a plain name: %v allocations; want 0", n)
	}
}

// FuzzAppend: Append writes every string as json.Marshal does.
func FuzzAppend(f *testing.F) {
	for _, s := range cases {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, _ := json.Marshal(s)
		if got := Append(nil, s); string(got) != string(want) {
			t.Errorf("Append(%q) = %s; want %s", s, got, want)
		}
	})
}
