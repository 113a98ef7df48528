package observe

import (
	"log/slog"
	"strings"
	"testing"
)

func TestRequestLogLine(t *testing.T) {
	h := newHarness(t, slog.LevelDebug, nil)
	w := h.do("GET", "/v1/pets/42?api_key=querysecret&x=1", "Authorization", "Bearer "+testKey,
		Header, "trace-me", "Cookie", "session=cookiesecret")
	if w.Code != 200 {
		t.Fatalf("GET /v1/pets/42: got status %d; want 200", w.Code)
	}
	raw := h.logs.String()
	lines := h.lines()
	if len(lines) != 1 {
		t.Fatalf("got %d log lines; want 1:\n%s", len(lines), raw)
	}
	l := lines[0]
	want := map[string]any{
		"level": "INFO", "msg": "request", "method": "GET", "route": "/v1/pets/:petId", "path": "/v1/pets/42",
		"status": 200.0, "bytes": float64(w.Body.Len()), "request_id": "trace-me", "client": "192.0.2.1",
		"key_id": float64(testKeyID),
	}
	for k, v := range want {
		if l[k] != v {
			t.Errorf("field %s: got %v; want %v", k, l[k], v)
		}
	}
	if d, ok := l["duration_ms"].(float64); !ok || d < 0 {
		t.Errorf("field duration_ms: got %v; want a number >= 0", l["duration_ms"])
	}
	for _, secret := range []string{testKey, "S3cr3t", "querysecret", "api_key", "cookiesecret", "Bearer"} {
		if strings.Contains(raw, secret) {
			t.Errorf("log contains %q:\n%s", secret, raw)
		}
	}
	if n := strings.Count(raw, `"request_id"`); n != 1 {
		t.Errorf("request_id appears %d times in the line; want 1:\n%s", n, raw)
	}
}

// TestOneLinePerRequest checks the number, level and fields of the lines of each request,
// and that the other lines of a request carry its ID.
func TestOneLinePerRequest(t *testing.T) {
	for _, tt := range []struct {
		name, method, target string
		level, route         string
		status               float64
		others               []string // messages of the request's other lines
	}{
		{"ok", "GET", "/v1/pets/42", "INFO", "/v1/pets/:petId", 200, nil},
		{"created", "POST", "/v1/pets", "INFO", "/v1/pets", 201, nil},
		{"not found", "GET", "/v1/pets/1", "INFO", "/v1/pets/:petId", 404, nil},
		{"unknown path", "GET", "/wp-login.php", "INFO", "unmatched", 404, nil},
		{"hostile method", "BREW", "/v1/pets", "INFO", "unmatched", 405, nil},
		{"not implemented", "GET", "/v1/store/orders", "INFO", "/v1/store/orders", 501, nil},
		{"unavailable", "GET", "/v1/fail", "ERROR", "/v1/fail", 503, []string{"request failed"}},
		{"panic", "GET", "/v1/panic", "ERROR", "/v1/panic", 500, []string{"handler panicked"}},
		{"health", "GET", "/healthz", "DEBUG", "/healthz", 200, nil},
		{"metrics", "GET", "/metrics", "DEBUG", "/metrics", 200, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, slog.LevelDebug, nil)
			id := h.do(tt.method, tt.target).Header().Get(Header)
			lines := h.lines()
			reqs := requestLines(lines)
			if len(reqs) != 1 {
				t.Fatalf("got %d request lines; want 1: %v", len(reqs), lines)
			}
			l := reqs[0]
			if l["level"] != tt.level || l["route"] != tt.route || l["status"] != tt.status || l["method"] != tt.method {
				t.Errorf("got level %v route %v status %v method %v; want %v %v %v %v",
					l["level"], l["route"], l["status"], l["method"], tt.level, tt.route, tt.status, tt.method)
			}
			if _, ok := l["key_id"]; ok {
				t.Errorf("got key_id %v on a request without a key; want none", l["key_id"])
			}
			var others []string
			for _, o := range lines {
				if o["msg"] != "request" {
					others = append(others, o["msg"].(string))
				}
				if o[requestIDField] != id {
					t.Errorf("line %q: got request_id %v; want %q", o["msg"], o[requestIDField], id)
				}
			}
			if strings.Join(others, "|") != strings.Join(tt.others, "|") {
				t.Errorf("other lines: got %q; want %q", others, tt.others)
			}
		})
	}
}

func TestQuietRoutesAtInfo(t *testing.T) {
	h := newHarness(t, slog.LevelInfo, nil)
	h.do("GET", "/healthz")
	h.do("GET", "/metrics")
	if lines := h.lines(); len(lines) != 0 {
		t.Errorf("at level info: got %d lines for /healthz and /metrics; want 0: %v", len(lines), lines)
	}
}

func TestLongPathTruncated(t *testing.T) {
	h := newHarness(t, slog.LevelInfo, nil)
	h.do("GET", "/"+strings.Repeat("a", 10_000))
	l := requestLines(h.lines())
	if len(l) != 1 {
		t.Fatalf("got %d request lines; want 1", len(l))
	}
	if p, _ := l[0]["path"].(string); len(p) != maxLoggedPath+len("...") || !strings.HasSuffix(p, "...") {
		t.Errorf("logged path: got %d bytes; want %d ending in ...", len(p), maxLoggedPath+3)
	}
}
