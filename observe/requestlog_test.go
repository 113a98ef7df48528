package observe

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
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

// TestRequestLineAsSlogWritesIt writes request lines, hostile ones among them, both ways: by
// hand (NewJSONLogHandler's path) and through slog's JSON handler. Both must be one JSON object
// per line with the same fields and values, in the same order.
func TestRequestLineAsSlogWritesIt(t *testing.T) {
	at := time.Date(2026, 11, 23, 23, 53, 23, 377698652, time.UTC)
	lines := []requestLine{
		{method: "GET", route: "/v1/pets", path: "/v1/pets", status: 200, duration: 2085 * time.Microsecond,
			bytes: 1131, id: "292c90ff5e0491760bb541439ffce590", client: "127.0.0.1", keyID: 2},
		{method: "POST", route: "unmatched", path: `/v1/"quoted"\back<>&` + "\x00\x1f\u2028\xff", status: 404,
			bytes: 0, id: "id with \"quotes\" and \n newline", client: "2001:db8::1"},
		{method: "M\u00e9THOD", route: "/v1/pets/:petId", path: "/v1/pets/%F0%9F%90%B6", status: 500,
			duration: 3*time.Second + time.Microsecond, bytes: 12, id: "x", client: "unix"},
		{method: "GET", route: "/v1/pets", path: "/", status: 200, duration: 0, id: "", client: ""},
		{method: "GET", route: "/v1/pets", path: "/v1/pets", status: 200, id: "r", client: "127.0.0.1",
			traceID: "4bf92f3577b34da6a3ce929d0e0e4736", keyID: 7},
	}
	for i, l := range lines {
		for _, level := range []slog.Level{slog.LevelInfo, slog.LevelError, slog.LevelDebug} {
			var viaSlog bytes.Buffer
			rec := slog.NewRecord(at, level, "request", 0)
			rec.AddAttrs(l.attrs()...)
			if err := slog.NewJSONHandler(&viaSlog, &slog.HandlerOptions{Level: slog.LevelDebug}).Handle(context.Background(), rec); err != nil {
				t.Fatal(err)
			}
			byHand := l.appendJSON(nil, at, level)
			if !bytes.HasSuffix(byHand, []byte("\n")) || bytes.Count(byHand, []byte("\n")) != 1 {
				t.Errorf("line %d: not one line: %q", i, byHand)
			}
			got, want := orderedFields(t, byHand), orderedFields(t, viaSlog.Bytes())
			if !slices.EqualFunc(got, want, func(a, b field) bool { return a.name == b.name && reflect.DeepEqual(a.value, b.value) }) {
				t.Errorf("line %d at %v:\nby hand %s\nslog    %s", i, level, byHand, viaSlog.Bytes())
			}
		}
	}
}

type field struct {
	name  string
	value any
}

// orderedFields decodes the JSON object of line into its fields, in order.
func orderedFields(t *testing.T, line []byte) []field {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(line))
	var fields []field
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		t.Fatalf("%s: not a JSON object: %v", line, err)
	}
	for dec.More() {
		name, err := dec.Token()
		if err != nil {
			t.Fatalf("%s: %v", line, err)
		}
		var v any
		if err := dec.Decode(&v); err != nil {
			t.Fatalf("%s: %v", line, err)
		}
		fields = append(fields, field{name.(string), v})
	}
	return fields
}

// TestAppendMillis checks that appendMillis writes what strconv.AppendFloat writes for the
// durations of requests, and beyond.
func TestAppendMillis(t *testing.T) {
	check := func(us int64) {
		if got, want := appendMillis(nil, us), strconv.AppendFloat(nil, float64(us)/1000, 'f', -1, 64); string(got) != string(want) {
			t.Fatalf("appendMillis(%d): got %s; want %s", us, got, want)
		}
	}
	for us := int64(0); us < 200_000; us++ {
		check(us)
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 1_000_000 {
		check(r.Int64N(1e15))
		check(r.Int64N(1 << 62))
	}
	for _, us := range []int64{1e15 - 1, 1e15, 1e15 + 1, -1, -1001, math.MaxInt64, math.MinInt64} {
		check(us)
	}
}
