package check

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/yaml"
)

// componentDir is the optional component for clusters where the Prometheus Operator runs.
const componentDir = "../prometheus-operator"

// alertsFile holds the alert rules that the PrometheusRule carries.
const alertsFile = "../../ops/alerts.yml"

// componentKinds are the kinds that live in componentDir, not beside the base's manifests.
var componentKinds = []string{"Component", "PodMonitor", "PrometheusRule"}

var update = flag.Bool("update", false, "write prometheusrule.yaml from deploy/ops/alerts.yml")

// operatorManifests holds the decoded objects of componentDir: one of each of componentKinds.
type operatorManifests struct {
	component *Component
	monitor   *monitoringv1.PodMonitor
	rule      *monitoringv1.PrometheusRule
}

// loadComponent decodes every manifest of componentDir strictly and requires one of each kind.
func loadComponent(t *testing.T) operatorManifests {
	t.Helper()
	objs, err := ReadDir(componentDir)
	if err != nil {
		t.Fatal(err)
	}
	var m operatorManifests
	for _, o := range objs {
		switch v := o.Obj.(type) {
		case *Component:
			m.component = v
		case *monitoringv1.PodMonitor:
			m.monitor = v
		case *monitoringv1.PrometheusRule:
			m.rule = v
		default:
			t.Fatalf("%s: a %T in %s, which holds %v only", o.File, o.Obj, componentDir, componentKinds)
		}
	}
	if m.component == nil || m.monitor == nil || m.rule == nil || len(objs) != len(componentKinds) {
		t.Fatalf("%s: want one each of %v; got %d documents", componentDir, componentKinds, len(objs))
	}
	return m
}

// TestOperatorComponent: the component lists every manifest of its folder, and the base's
// kustomization.yaml, which leaves it out, shows the line that takes it in.
func TestOperatorComponent(t *testing.T) {
	m := loadComponent(t)
	files, err := filepath.Glob(filepath.Join(componentDir, "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, f := range files {
		if b := filepath.Base(f); b != "kustomization.yaml" {
			want = append(want, b)
		}
	}
	if got := slices.Sorted(slices.Values(m.component.Resources)); !slices.Equal(got, want) {
		t.Errorf("%s/kustomization.yaml resources: got %v; want %v", componentDir, got, want)
	}
	base, err := os.ReadFile(filepath.Join(dir, "kustomization.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if line := "# components: [" + filepath.Base(componentDir) + "]"; !bytes.Contains(base, []byte(line+"\n")) {
		t.Errorf("kustomization.yaml: want the line %q, which deploy/README.md tells to uncomment", line)
	}
}

// TestPodMonitor: the PodMonitor scrapes the Deployment's pods on the port that serves
// /metrics, under the job name that deploy/ops's rules and dashboard expect.
func TestPodMonitor(t *testing.T) {
	m, pm := load(t), loadComponent(t).monitor
	pod := m.deployment.Spec.Template.Labels
	if len(pm.Spec.Selector.MatchLabels) == 0 || len(pm.Spec.Selector.MatchExpressions) > 0 {
		t.Fatal("PodMonitor: want a selector of matchLabels only")
	}
	for k, v := range pm.Spec.Selector.MatchLabels {
		if pod[k] != v {
			t.Errorf("PodMonitor selects %s=%s; the pod template's labels are %v", k, v, pod)
		}
	}
	if job := pod[pm.Spec.JobLabel]; job != "petstore" {
		t.Errorf("PodMonitor jobLabel %q: the job would be %q; deploy/ops's rules want petstore", pm.Spec.JobLabel, job)
	}
	if len(pm.Spec.PodMetricsEndpoints) != 1 {
		t.Fatalf("PodMonitor: want one endpoint; got %d", len(pm.Spec.PodMetricsEndpoints))
	}
	ep := pm.Spec.PodMetricsEndpoints[0]
	if ep.Port == nil || ep.Path != "/metrics" {
		t.Fatalf("PodMonitor scrapes port %v, path %q; want a port by name, /metrics", ep.Port, ep.Path)
	}
	if cp, ok := portOf(container(t, m), intstr.FromString(*ep.Port)); !ok || cp.Name != "metrics" {
		t.Errorf("PodMonitor scrapes port %q; want the container port named metrics (TestPorts: PETSTORE_METRICS_ADDR's)", *ep.Port)
	}
}

// TestPrometheusRule: the PrometheusRule carries exactly the groups of deploy/ops/alerts.yml,
// which promtool checks and tests; -update writes it from them.
func TestPrometheusRule(t *testing.T) {
	data, err := os.ReadFile(alertsFile)
	if err != nil {
		t.Fatal(err)
	}
	var alerts struct {
		Groups []monitoringv1.RuleGroup `json:"groups"`
	}
	if err := decodeStrict(data, &alerts); err != nil {
		t.Fatalf("%s: %v", alertsFile, err)
	}
	if *update {
		writeRule(t, alerts.Groups)
	}
	if got := loadComponent(t).rule.Spec.Groups; !reflect.DeepEqual(got, alerts.Groups) {
		t.Errorf("prometheusrule.yaml differs from %s; write it again: cd deploy/kubernetes/check && go test -run TestPrometheusRule -update", alertsFile)
	}
}

// ruleHeader heads the generated prometheusrule.yaml.
const ruleHeader = `# The alert rules of deploy/ops/alerts.yml for the Prometheus Operator, written from that file
# by ` + "`cd deploy/kubernetes/check && go test -run TestPrometheusRule -update`" + `: change
# alerts.yml (which promtool tests), never this file; make ops-check fails when they differ.
# Give it the labels that your Prometheus's ruleSelector matches.
`

// writeRule writes prometheusrule.yaml with groups.
func writeRule(t *testing.T, groups []monitoringv1.RuleGroup) {
	t.Helper()
	out, err := yaml.Marshal(map[string]any{
		"apiVersion": "monitoring.coreos.com/v1",
		"kind":       "PrometheusRule",
		"metadata":   map[string]any{"name": "petstore", "labels": map[string]string{"app": "petstore"}},
		"spec":       map[string]any{"groups": groups},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(componentDir, "prometheusrule.yaml"), append([]byte(ruleHeader), out...), 0o644); err != nil {
		t.Fatal(err)
	}
}
