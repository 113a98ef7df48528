package e2e

import (
	"encoding/json"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// metricName finds the metric names that deploy/ops queries (labels and functions are not
// prefixed so).
var metricName = regexp.MustCompile(`\b(?:petstore|go|process)_[a-z0-9_]+\b`)

// TestOpsKitMetricsExist checks that every metric the alert rules and the dashboard of
// deploy/ops query is one the service exposes: a petstore_ metric listed in observe/doc.go (a
// histogram with its _bucket, _sum and _count series), or a go_ or process_ metric, which
// doc.go lists only by prefix, found in a real scrape of /metrics.
func TestOpsKitMetricsExist(t *testing.T) {
	t.Parallel()
	documented := documentedMetrics(t)
	api := newTestAPI(t, dbtestSQLite(t))
	api.do(t, get("/v1/pets"))
	req := get("/metrics")
	req.noAuth = true
	scrape := api.do(t, req).body
	for _, file := range []string{"../deploy/ops/alerts.yml", "../deploy/ops/dashboard.json"} {
		text, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		names := slices.Compact(slices.Sorted(slices.Values(metricName.FindAllString(string(text), -1))))
		if len(names) < 5 {
			t.Errorf("%s queries %d metrics; want the kit's", file, len(names))
		}
		for _, name := range names {
			known := documented[name]
			if !strings.HasPrefix(name, "petstore_") {
				known = strings.Contains(scrape, "\n"+name+"{") || strings.Contains(scrape, "\n"+name+" ")
			}
			if !known {
				t.Errorf("%s queries %s, which the service does not expose (observe/doc.go, /metrics)", file, name)
			}
		}
	}
}

// documentedMetrics returns the petstore_ series names listed in observe/doc.go.
func documentedMetrics(t *testing.T) map[string]bool {
	t.Helper()
	doc, err := os.ReadFile("../observe/doc.go")
	if err != nil {
		t.Fatal(err)
	}
	line := regexp.MustCompile(`(?m)^//\s+(petstore_[a-z0-9_]+)(?:\{[^}]*\})?\s+(\w+)`)
	names := map[string]bool{}
	for _, m := range line.FindAllStringSubmatch(string(doc), -1) {
		names[m[1]] = true
		if m[2] == "histogram" {
			for _, suffix := range []string{"_bucket", "_sum", "_count"} {
				names[m[1]+suffix] = true
			}
		}
	}
	if len(names) < 6 {
		t.Fatalf("observe/doc.go lists %d petstore_ metrics; want its # Metrics section", len(names))
	}
	return names
}

// TestOpsDashboard checks that the Grafana dashboard is JSON whose every panel but the rows
// queries something, with unique ids.
func TestOpsDashboard(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile("../deploy/ops/dashboard.json")
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Title  string
		UID    string
		Panels []struct {
			ID      int
			Type    string
			Title   string
			Targets []struct{ Expr string }
		}
	}
	if err := json.Unmarshal(raw, &dash); err != nil {
		t.Fatalf("dashboard.json: %v", err)
	}
	if dash.Title == "" || dash.UID == "" {
		t.Errorf("title %q, uid %q: want both", dash.Title, dash.UID)
	}
	ids := map[int]bool{}
	for _, p := range dash.Panels {
		if ids[p.ID] {
			t.Errorf("panel %q: id %d used twice", p.Title, p.ID)
		}
		ids[p.ID] = true
		if p.Type == "row" {
			continue
		}
		if len(p.Targets) == 0 {
			t.Errorf("panel %q queries nothing", p.Title)
		}
		for _, target := range p.Targets {
			if target.Expr == "" {
				t.Errorf("panel %q has an empty query", p.Title)
			}
		}
	}
}
