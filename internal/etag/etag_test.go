package etag_test

import (
	"net/http"
	"strings"
	"testing"

	"petstore/internal/etag"
)

func TestOf(t *testing.T) {
	a := etag.Of([]byte(`[{"id":1}]`), "")
	if len(a) != 18 || a[0] != '"' || a[17] != '"' {
		t.Fatalf("Of = %s; want a quoted 16-digit hex tag", a)
	}
	if b := etag.Of([]byte(`[{"id":1}]`), ""); b != a {
		t.Errorf("the same parts give %s and %s", a, b)
	}
	for _, other := range []struct {
		body   string
		header string
	}{
		{`[{"id":2}]`, ""},
		{`[{"id":1}]`, `</v1/pets?after=x>; rel="next"`},
		{`[{"id":1}]x`, ""}, // where the body ends is part of the tag
	} {
		if b := etag.Of([]byte(other.body), other.header); b == a {
			t.Errorf("Of(%q, %q) = %s, the tag of another answer", other.body, other.header, b)
		}
	}
	if allocs := testing.AllocsPerRun(100, func() { etag.Of([]byte(`[{"id":1}]`), "h") }); allocs > 1 {
		t.Errorf("Of allocates %v times; want only its tag", allocs)
	}
}

func TestNoneMatch(t *testing.T) {
	const tag = `"0123456789abcdef"`
	for _, tt := range []struct {
		name   string
		fields []string
		want   bool
	}{
		{"no field", nil, false},
		{"the tag", []string{tag}, true},
		{"weak form of the tag", []string{"W/" + tag}, true},
		{"another tag", []string{`"fedcba9876543210"`}, false},
		{"in a list", []string{`"a", ` + tag + `, W/"b"`}, true},
		{"list without it", []string{`"a", W/"b"`}, false},
		{"across fields", []string{`"a"`, "W/" + tag}, true},
		{"empty list elements", []string{` , ` + tag + `,`}, true},
		{"star", []string{"*"}, true},
		{"star with spaces", []string{" * "}, true},
		{"star in a list is invalid", []string{`*, "a"`}, false},
		{"star beside a field is invalid", []string{"*", tag}, false},
		{"unquoted", []string{"0123456789abcdef"}, false},
		{"unquoted beside the tag: the field is invalid", []string{"abc, " + tag}, false},
		{"lowercase weak prefix", []string{"w/" + tag}, false},
		{"quote inside", []string{`"01234567"89abcdef"`}, false},
		{"control character", []string{"\"01234567\x0189abcdef\""}, false},
		{"empty", []string{""}, false},
		{"empty opaque tag", []string{`""`}, false},
		{"comma inside a tag", []string{`"a,b", ` + tag}, true},
		{"comma inside a weak tag", []string{`W/"x,y",` + tag}, true},
		{"a tag's comma does not split it", []string{`"0123456789abcdef,"`}, false},
		{"two tags without a comma", []string{`"a" ` + tag}, false},
		{"unterminated", []string{`"abc, ` + tag}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := http.Header{}
			for _, f := range tt.fields {
				h.Add("If-None-Match", f)
			}
			if got := etag.NoneMatch(h, tag); got != tt.want {
				t.Errorf("NoneMatch(%q) = %v; want %v", tt.fields, got, tt.want)
			}
		})
	}
}

// FuzzNoneMatch checks that any field is read without a panic, and never taken as matching a
// tag it does not hold, unless it is "*".
func FuzzNoneMatch(f *testing.F) {
	for _, s := range []string{`"a"`, `W/"a", "b"`, "*", `, ,"x"`, "\"\x80\"", `"a`, `W/`} {
		f.Add(s)
	}
	const tag = `"0123456789abcdef"`
	f.Fuzz(func(t *testing.T, field string) {
		h := http.Header{"If-None-Match": {field}}
		if etag.NoneMatch(h, tag) && strings.TrimSpace(field) != "*" && !strings.Contains(field, tag) {
			t.Fatalf("NoneMatch(%q) matched %s", field, tag)
		}
	})
}

// TestSet: Set gives the answer the tag of Of and the Cache-Control asked for, and reports a
// match of If-None-Match, weak or strong, and nothing else.
func TestSet(t *testing.T) {
	body, link := []byte(`[{"id":1}]`), `</v1/pets?after=x>; rel="next"`
	tag := etag.Of(body, link)
	for _, c := range []struct {
		inm  string
		want bool
	}{{"", false}, {tag, true}, {"W/" + tag, true}, {`"other"`, false}, {`"other", ` + tag, true}} {
		h, req := http.Header{}, http.Header{}
		if c.inm != "" {
			req.Set("If-None-Match", c.inm)
		}
		if got := etag.Set(h, req, body, link, etag.Immutable); got != c.want {
			t.Errorf("If-None-Match %q: Set = %v; want %v", c.inm, got, c.want)
		}
		if h.Get("ETag") != tag || h.Get("Cache-Control") != etag.Immutable {
			t.Errorf("If-None-Match %q: headers %v; want ETag %s and Cache-Control %q", c.inm, h, tag, etag.Immutable)
		}
	}
}
