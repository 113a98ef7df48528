package main

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestAppendStringIsJSON(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want string // the decoded value; the input itself when empty
	}{
		{"plain", "Rex", ""},
		{"quotes and backslash", `a"b\c`, ""},
		{"control characters", "a\x00b\x01\n\r\t\x1f", ""},
		{"unicode", "chat 🐈 ñ 日本", ""},
		{"separators", "a\u2028b\u2029c", ""},
		{"invalid utf-8", "a\xffb", "a\ufffdb"},
		{"html", "<a href='x'>&</a>", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := appendString(nil, []byte(tt.in))
			var got string
			if err := json.Unmarshal(out, &got); err != nil {
				t.Fatalf("appendString(%q) = %s: not JSON: %v", tt.in, out, err)
			}
			want := tt.want
			if want == "" {
				want = tt.in
			}
			if got != want {
				t.Errorf("got %q; want %q", got, want)
			}
		})
	}
}

func TestAppendPetMatchesEncodingJSON(t *testing.T) {
	type pet struct {
		ID         int64   `json:"id"`
		Name       string  `json:"name"`
		CategoryID int64   `json:"categoryId"`
		Status     *string `json:"status,omitempty"`
	}
	sold := "sold"
	for _, p := range []pet{{1, "Rex", 3, &sold}, {9223372036854775807, "Tom \"the\" cat", 1, nil}} {
		var st []byte
		if p.Status != nil {
			st = []byte(*p.Status)
		}
		got := string(appendPet(nil, p.ID, []byte(p.Name), p.CategoryID, st))
		want, _ := json.Marshal(p)
		if got != string(want) {
			t.Errorf("got %s; want %s", got, want)
		}
	}
}

func TestListParams(t *testing.T) {
	tests := []struct {
		query  string
		limit  int
		status string
		bad    bool
	}{
		{"", 20, "", false},
		{"limit=100&status=sold", 100, "sold", false},
		{"status=av%61ilable", 20, "available", false},
		{"after=x&limit=5", 5, "", false},
		{"limit=0", 0, "", true},
		{"limit=101", 0, "", true},
		{"limit=", 0, "", true},
		{"limit=1&limit=2", 0, "", true},
		{"status=lost", 0, "", true},
	}
	for _, tt := range tests {
		t.Run(tt.query, func(t *testing.T) {
			limit, status, msg := listParams(tt.query)
			if (msg != "") != tt.bad || (!tt.bad && (limit != tt.limit || status != tt.status)) {
				t.Errorf("got %d, %q, %q; want %d, %q, bad=%v", limit, status, msg, tt.limit, tt.status, tt.bad)
			}
		})
	}
}

func TestDecodeNewPet(t *testing.T) {
	tests := []struct {
		body string
		bad  bool
	}{
		{`{"name":"Rex","categoryId":3,"status":"available"}`, false},
		{`{"name":"Rex","categoryId":3,"status":null,"id":9}`, false},
		{`{"name":"  ","categoryId":3}`, true},
		{`{"name":"` + strings.Repeat("é", 256) + `","categoryId":3}`, true},
		{`{"name":"Rex","categoryId":"3"}`, true},
		{`{"name":"Rex","categoryId":1.5}`, true},
		{`{"name":"Rex","categoryId":0}`, true},
		{`{"name":"Rex","categoryId":3,"status":"lost"}`, true},
		{`[1]`, true},
		{``, true},
	}
	for _, tt := range tests {
		t.Run(tt.body, func(t *testing.T) {
			if _, _, _, msg := decodeNewPet([]byte(tt.body)); (msg != "") != tt.bad {
				t.Errorf("got message %q; want bad=%v", msg, tt.bad)
			}
		})
	}
}
