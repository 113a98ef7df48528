package observe

import (
	"bytes"
	"context"
	"log/slog"
	"regexp"
	"strings"
	"testing"
)

// generatedID is the form of a request ID the service makes.
var generatedID = regexp.MustCompile(`^[0-9a-f]{32}$`)

func TestRequestID(t *testing.T) {
	long := strings.Repeat("a", MaxRequestIDLen)
	for _, tt := range []struct {
		name   string
		method string // GET when empty
		target string
		sent   []string // X-Request-ID values sent
		keep   bool     // whether the sent one is kept
	}{
		{"absent", "", "/v1/pets/42", nil, false},
		{"valid", "", "/v1/pets/42", []string{"req-1.a_B~9"}, true},
		{"uuid", "", "/v1/pets/42", []string{"0b9e7c1e-4d3a-4f39-9a8e-2f1d5c6b7a80"}, true},
		{"longest", "", "/v1/pets/42", []string{long}, true},
		{"too long", "", "/v1/pets/42", []string{long + "a"}, false},
		{"empty", "", "/v1/pets/42", []string{""}, false},
		{"space", "", "/v1/pets/42", []string{"abc def"}, false},
		{"log injection", "", "/v1/pets/42", []string{`x","level":"ERROR`}, false},
		{"non-ASCII", "", "/v1/pets/42", []string{"ïd"}, false},
		{"repeated", "", "/v1/pets/42", []string{"one", "two"}, false},
		{"kept on 404", "", "/no/such/path", []string{"client-404"}, true},
		{"kept on 500", "", "/v1/panic", []string{"client-500"}, true},
		{"generated on 500", "", "/v1/panic", nil, false},
		{"kept on 405", "PUT", "/v1/pets/42", []string{"client-405"}, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, slog.LevelInfo, nil)
			method := tt.method
			if method == "" {
				method = "GET"
			}
			var header []string
			for _, v := range tt.sent {
				header = append(header, Header, v)
			}
			got := h.do(method, tt.target, header...).Header().Values(Header)
			if len(got) != 1 {
				t.Fatalf("response %s: got %q; want one value", Header, got)
			}
			if tt.keep && got[0] != tt.sent[0] {
				t.Errorf("response %s: got %q; want the client's %q", Header, got[0], tt.sent[0])
			}
			if !tt.keep && !generatedID.MatchString(got[0]) {
				t.Errorf("response %s: got %q; want 32 hex digits", Header, got[0])
			}
			for _, l := range h.lines() {
				if l[requestIDField] != got[0] {
					t.Errorf("log line %q: got request_id %v; want %q", l["msg"], l[requestIDField], got[0])
				}
			}
		})
	}
}

func TestGeneratedIDsDiffer(t *testing.T) {
	h := newHarness(t, slog.LevelInfo, nil)
	seen := make(map[string]bool)
	for range 100 {
		id := h.do("GET", "/healthz").Header().Get(Header)
		if seen[id] {
			t.Fatalf("request ID %q generated twice", id)
		}
		seen[id] = true
	}
}

func TestLogHandler(t *testing.T) {
	ctx := withRequestID(context.Background(), "abc")
	for _, tt := range []struct {
		name string
		log  func(*slog.Logger)
		want string // the line after the time field
	}{
		{"no ID", func(l *slog.Logger) { l.Info("x") }, `"level":"INFO","msg":"x"}`},
		{"ID", func(l *slog.Logger) { l.InfoContext(ctx, "x") }, `"level":"INFO","msg":"x","request_id":"abc"}`},
		{"own ID kept", func(l *slog.Logger) { l.InfoContext(ctx, "x", "request_id", "mine") }, `"level":"INFO","msg":"x","request_id":"mine"}`},
		{"with attrs", func(l *slog.Logger) { l.With("a", 1).InfoContext(ctx, "x") }, `"level":"INFO","msg":"x","a":1,"request_id":"abc"}`},
		{"with group", func(l *slog.Logger) { l.WithGroup("g").InfoContext(ctx, "x", "b", 2) }, `"level":"INFO","msg":"x","g":{"b":2,"request_id":"abc"}}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			tt.log(slog.New(NewLogHandler(slog.NewJSONHandler(&buf, &slog.HandlerOptions{
				ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
					if a.Key == slog.TimeKey {
						return slog.Attr{}
					}
					return a
				},
			}))))
			if got := strings.TrimSpace(buf.String()); got != "{"+tt.want {
				t.Errorf("got %s; want {%s", got, tt.want)
			}
		})
	}
}

func TestRequestIDOutsideRequests(t *testing.T) {
	if got := RequestID(context.Background()); got != "" {
		t.Errorf("RequestID(Background): got %q; want empty", got)
	}
}
