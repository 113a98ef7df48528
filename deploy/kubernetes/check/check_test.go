package check

import (
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// dir is deploy/kubernetes, the folder above this module.
const dir = ".."

// subscriberWrites is how long the last writes to stalled WebSocket and SSE subscribers may
// take at shutdown: live.RegistryOptions.WriteTimeout's default, which no variable changes.
const subscriberWrites = 10 * time.Second

// manifests holds the decoded objects of dir: exactly one of each kind that the checks compare.
type manifests struct {
	deployment    *appsv1.Deployment
	service       *corev1.Service
	secret        *corev1.Secret
	pdb           *policyv1.PodDisruptionBudget
	hpa           *autoscalingv2.HorizontalPodAutoscaler
	netpol        *networkingv1.NetworkPolicy
	ingress       *networkingv1.Ingress
	kustomization *Kustomization
	files         map[string]string // the file of each kind, by kind
}

// load decodes every manifest of dir strictly (a failure here is a typo or an unknown kind) and
// requires one of each kind.
func load(t *testing.T) manifests {
	t.Helper()
	objs, err := ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	m := manifests{files: map[string]string{}}
	for _, o := range objs {
		var kind string
		switch v := o.Obj.(type) {
		case *appsv1.Deployment:
			kind, m.deployment = "Deployment", v
		case *corev1.Service:
			kind, m.service = "Service", v
		case *corev1.Secret:
			kind, m.secret = "Secret", v
		case *policyv1.PodDisruptionBudget:
			kind, m.pdb = "PodDisruptionBudget", v
		case *autoscalingv2.HorizontalPodAutoscaler:
			kind, m.hpa = "HorizontalPodAutoscaler", v
		case *networkingv1.NetworkPolicy:
			kind, m.netpol = "NetworkPolicy", v
		case *networkingv1.Ingress:
			kind, m.ingress = "Ingress", v
		case *Kustomization:
			kind, m.kustomization = "Kustomization", v
		}
		if f, dup := m.files[kind]; dup {
			t.Fatalf("%s: a second %s (the first in %s): the checks expect one", o.File, kind, f)
		}
		m.files[kind] = o.File
	}
	if len(m.files) != len(types) {
		t.Fatalf("want one manifest of each of %d kinds; got %v", len(types), m.files)
	}
	return m
}

// TestManifests decodes every manifest of the folder strictly; the other tests do the same
// before they compare them.
func TestManifests(t *testing.T) {
	m := load(t)
	t.Logf("%d kinds decoded: %v", len(m.files), m.files)
}

// TestTypoFails feeds mistyped manifests through the decoder that reads the folder.
func TestTypoFails(t *testing.T) {
	for name, doc := range map[string]string{
		"misspelt field": `
apiVersion: apps/v1
kind: Deployment
metadata: {name: petstore}
spec:
  template:
    spec:
      terminationGracePeriodSecond: 45
`,
		"field at the wrong level": `
apiVersion: v1
kind: Service
metadata: {name: petstore}
spec:
  ports:
    - {name: http, port: 80, targetPort: http}
  targetPort: http
`,
		"field given twice": `
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: petstore}
spec:
  maxUnavailable: 1
  maxUnavailable: 2
`,
		"field in the wrong case": `
apiVersion: v1
kind: Service
metadata: {name: petstore}
spec:
  ports:
    - {name: http, port: 80, targetport: http}
`,
		"second document": `
apiVersion: v1
kind: Secret
metadata: {name: petstore}
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: petstore}
spec:
  podselector: {}
`,
		"kustomization": `
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resource: [deployment.yaml]
`,
		"unknown kind": `
apiVersion: apps/v1
kind: Deploymnet
metadata: {name: petstore}
`,
		"old apiVersion": `
apiVersion: policy/v1beta1
kind: PodDisruptionBudget
metadata: {name: petstore}
`,
	} {
		if _, err := Decode(name, []byte(doc)); err == nil {
			t.Errorf("%s: decoded without error", name)
		} else {
			t.Log(err)
		}
	}
	objs, err := Decode("good", []byte("# a comment\n---\napiVersion: v1\nkind: Secret\nmetadata: {name: petstore}\n---\n"))
	if err != nil || len(objs) != 1 {
		t.Errorf("a valid Secret between empty documents: %d objects, %v", len(objs), err)
	}
}

// TestKustomization: `kubectl apply -k` applies every manifest but the example Secret, which
// would overwrite the real one.
func TestKustomization(t *testing.T) {
	m := load(t)
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, f := range files {
		if b := filepath.Base(f); b != m.files["Kustomization"] && b != m.files["Secret"] {
			want = append(want, b)
		}
	}
	got := slices.Sorted(slices.Values(m.kustomization.Resources))
	if !slices.Equal(got, want) {
		t.Errorf("kustomization.yaml resources: got %v, want %v (every manifest but the example Secret)", got, want)
	}
}

// TestSelectors: every selector picks the Deployment's pods, and the HPA scales the Deployment.
func TestSelectors(t *testing.T) {
	m := load(t)
	d := m.deployment
	pod := d.Spec.Template.Labels
	matches := func(what string, sel map[string]string) {
		t.Helper()
		if len(sel) == 0 {
			t.Errorf("%s: empty selector", what)
		}
		for k, v := range sel {
			if pod[k] != v {
				t.Errorf("%s: selects %s=%s; the pod template's labels are %v", what, k, v, pod)
			}
		}
	}
	if d.Spec.Selector == nil || len(d.Spec.Selector.MatchExpressions) > 0 {
		t.Fatal("Deployment: want a selector of matchLabels only")
	}
	matches("Deployment selector", d.Spec.Selector.MatchLabels)
	matches("Service selector", m.service.Spec.Selector)
	if m.pdb.Spec.Selector == nil {
		t.Fatal("PodDisruptionBudget: no selector")
	}
	matches("PodDisruptionBudget selector", m.pdb.Spec.Selector.MatchLabels)
	matches("NetworkPolicy podSelector", m.netpol.Spec.PodSelector.MatchLabels)
	spread := d.Spec.Template.Spec.TopologySpreadConstraints
	keys := map[string]bool{}
	for _, c := range spread {
		if c.LabelSelector == nil {
			t.Fatalf("topology spread over %s: no labelSelector", c.TopologyKey)
		}
		matches("topology spread over "+c.TopologyKey, c.LabelSelector.MatchLabels)
		keys[c.TopologyKey] = true
	}
	if !keys["kubernetes.io/hostname"] || !keys["topology.kubernetes.io/zone"] {
		t.Errorf("want the pods spread over nodes and zones; spread over %v", keys)
	}
	ref := m.hpa.Spec.ScaleTargetRef
	if ref.APIVersion != "apps/v1" || ref.Kind != "Deployment" || ref.Name != d.Name {
		t.Errorf("HorizontalPodAutoscaler scales %s %s/%s, not the Deployment %s", ref.APIVersion, ref.Kind, ref.Name, d.Name)
	}
	if m.hpa.Spec.MinReplicas == nil || d.Spec.Replicas == nil || *m.hpa.Spec.MinReplicas != *d.Spec.Replicas {
		t.Error("HorizontalPodAutoscaler's minReplicas differs from the Deployment's replicas")
	}
}

// container is the Deployment's only container.
func container(t *testing.T, m manifests) corev1.Container {
	t.Helper()
	cs := m.deployment.Spec.Template.Spec.Containers
	if len(cs) != 1 {
		t.Fatalf("Deployment: want one container; got %d", len(cs))
	}
	return cs[0]
}

// portOf returns the container port that p names (by name or by number), or false.
func portOf(c corev1.Container, p intstr.IntOrString) (corev1.ContainerPort, bool) {
	for _, cp := range c.Ports {
		if (p.Type == intstr.String && cp.Name == p.StrVal) || (p.Type == intstr.Int && cp.ContainerPort == p.IntVal) {
			return cp, true
		}
	}
	return corev1.ContainerPort{}, false
}

// env returns the literal value of the container's variable name, or "".
func env(c corev1.Container, name string) string {
	for _, e := range c.Env {
		if e.Name == name {
			return e.Value
		}
	}
	return ""
}

// TestPorts: the Service, the probes, the Ingress and the NetworkPolicy name ports that exist;
// /metrics is where the service listens and Prometheus looks, and only the monitoring
// namespace reaches it.
func TestPorts(t *testing.T) {
	m := load(t)
	c := container(t, m)
	for _, p := range m.service.Spec.Ports {
		if _, ok := portOf(c, p.TargetPort); !ok {
			t.Errorf("Service port %s: targetPort %s is no container port", p.Name, p.TargetPort.String())
		}
	}
	for name, probe := range map[string]*corev1.Probe{"startup": c.StartupProbe, "liveness": c.LivenessProbe, "readiness": c.ReadinessProbe} {
		if probe == nil || probe.HTTPGet == nil {
			t.Errorf("%s probe: want an HTTP GET", name)
			continue
		}
		if cp, ok := portOf(c, probe.HTTPGet.Port); !ok || cp.Name != "http" {
			t.Errorf("%s probe: port %s is not the API's port", name, probe.HTTPGet.Port.String())
		}
	}

	metrics, ok := portOf(c, intstr.FromString("metrics"))
	if !ok {
		t.Fatal("no container port named metrics")
	}
	if _, port, err := net.SplitHostPort(env(c, "PETSTORE_METRICS_ADDR")); err != nil || port != strconv.Itoa(int(metrics.ContainerPort)) {
		t.Errorf("PETSTORE_METRICS_ADDR %q is not on the metrics port %d", env(c, "PETSTORE_METRICS_ADDR"), metrics.ContainerPort)
	}
	if a := m.deployment.Spec.Template.Annotations["prometheus.io/port"]; a != strconv.Itoa(int(metrics.ContainerPort)) {
		t.Errorf("prometheus.io/port %q is not the metrics port %d", a, metrics.ContainerPort)
	}
	for _, p := range m.service.Spec.Ports {
		if cp, _ := portOf(c, p.TargetPort); cp.Name == "metrics" {
			t.Error("the Service carries the metrics port")
		}
	}

	// Each container port is admitted by the NetworkPolicy, and every port it admits is one;
	// the metrics port only from the monitoring namespace.
	admitted := map[string]bool{}
	for i, rule := range m.netpol.Spec.Ingress {
		if len(rule.Ports) == 0 {
			t.Errorf("NetworkPolicy ingress rule %d admits every port", i+1)
		}
		for _, p := range rule.Ports {
			if p.Port == nil {
				t.Errorf("NetworkPolicy ingress rule %d: a rule without a port admits every port", i+1)
				continue
			}
			cp, ok := portOf(c, *p.Port)
			if !ok {
				t.Errorf("NetworkPolicy ingress rule %d: port %s is no container port", i+1, p.Port.String())
				continue
			}
			admitted[cp.Name] = true
			if cp.Name == "metrics" {
				if len(rule.From) != 1 || rule.From[0].NamespaceSelector == nil || rule.From[0].PodSelector != nil ||
					rule.From[0].NamespaceSelector.MatchLabels["kubernetes.io/metadata.name"] != "monitoring" {
					t.Errorf("NetworkPolicy ingress rule %d: the metrics port from %v, not the monitoring namespace alone", i+1, rule.From)
				}
			}
		}
	}
	for _, cp := range c.Ports {
		if !admitted[cp.Name] {
			t.Errorf("container port %s (%d): no NetworkPolicy ingress rule admits it", cp.Name, cp.ContainerPort)
		}
	}
	if !slices.Contains(m.netpol.Spec.PolicyTypes, networkingv1.PolicyTypeEgress) {
		t.Error("NetworkPolicy: no Egress policy type, so egress is not restricted")
	}
	egress := map[int32]bool{}
	for _, rule := range m.netpol.Spec.Egress {
		for _, p := range rule.Ports {
			if p.Port != nil && p.Port.Type == intstr.Int {
				egress[p.Port.IntVal] = true
			}
		}
	}
	// The database and Redis ports of the example Secret's addresses, and DNS.
	for _, key := range []string{"database-url", "redis-url"} {
		u, err := url.Parse(m.secret.StringData[key])
		if err != nil || u.Port() == "" {
			t.Errorf("Secret %s: %q has no port", key, m.secret.StringData[key])
			continue
		}
		if port, _ := strconv.Atoi(u.Port()); !egress[int32(port)] {
			t.Errorf("NetworkPolicy: no egress to port %d of the Secret's %s", port, key)
		}
	}
	if !egress[53] {
		t.Error("NetworkPolicy: no egress to DNS (53)")
	}

	// The Ingress sends to the Service's port.
	for _, r := range m.ingress.Spec.Rules {
		for _, p := range r.HTTP.Paths {
			b := p.Backend.Service
			if b == nil || b.Name != m.service.Name {
				t.Errorf("Ingress path %s: not to the Service %s", p.Path, m.service.Name)
				continue
			}
			if !slices.ContainsFunc(m.service.Spec.Ports, func(sp corev1.ServicePort) bool {
				return (b.Port.Name != "" && sp.Name == b.Port.Name) || (b.Port.Number != 0 && sp.Port == b.Port.Number)
			}) {
				t.Errorf("Ingress path %s: port %v is not the Service's", p.Path, b.Port)
			}
		}
	}
}

// TestGracePeriod: SIGKILL comes after the worst-case shutdown: the drain delay, then the last
// writes to stalled subscribers, then the wait for the requests in flight.
func TestGracePeriod(t *testing.T) {
	m := load(t)
	c := container(t, m)
	duration := func(name string, def time.Duration) time.Duration {
		v := env(c, name)
		if v == "" {
			return def // the service's default (config.Default)
		}
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return d
	}
	worst := duration("PETSTORE_DRAIN_DELAY", 5*time.Second) + subscriberWrites + duration("PETSTORE_SHUTDOWN_TIMEOUT", 20*time.Second)
	g := m.deployment.Spec.Template.Spec.TerminationGracePeriodSeconds
	if g == nil || time.Duration(*g)*time.Second <= worst {
		t.Errorf("terminationGracePeriodSeconds must exceed the worst-case shutdown of %v", worst)
	}
}

// TestHardening: the settings the issue asked for stay.
func TestHardening(t *testing.T) {
	m := load(t)
	spec := m.deployment.Spec.Template.Spec
	c := container(t, m)
	if spec.AutomountServiceAccountToken == nil || *spec.AutomountServiceAccountToken {
		t.Error("automountServiceAccountToken must be false: the service calls no Kubernetes API")
	}
	if spec.SecurityContext == nil || spec.SecurityContext.RunAsNonRoot == nil || !*spec.SecurityContext.RunAsNonRoot {
		t.Error("runAsNonRoot must be true")
	}
	sc := c.SecurityContext
	if sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem ||
		sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
		t.Error("the container must have a read-only root and no privilege escalation")
	}

	// Secret references: the Secret of the example has every key, and only redis-url is optional.
	for _, e := range c.Env {
		if e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil {
			continue
		}
		ref := e.ValueFrom.SecretKeyRef
		if ref.Name != m.secret.Name {
			t.Errorf("%s: from Secret %s, not %s", e.Name, ref.Name, m.secret.Name)
		}
		if _, ok := m.secret.StringData[ref.Key]; !ok {
			t.Errorf("%s: the example Secret has no key %s", e.Name, ref.Key)
		}
		optional := ref.Optional != nil && *ref.Optional
		if want := e.Name == "PETSTORE_REDIS_URL"; optional != want {
			t.Errorf("%s: optional is %v; want %v (Redis is optional in the service, the database is not)", e.Name, optional, want)
		}
	}

	// The public URL advertises the Ingress's host, over TLS.
	u, err := url.Parse(env(c, "PETSTORE_PUBLIC_URL"))
	if err != nil || u.Scheme != "https" || !strings.HasSuffix(u.Path, "/v1") {
		t.Fatalf("PETSTORE_PUBLIC_URL %q: want https://HOST/v1", env(c, "PETSTORE_PUBLIC_URL"))
	}
	for _, r := range m.ingress.Spec.Rules {
		if r.Host != u.Host {
			t.Errorf("Ingress host %q is not PETSTORE_PUBLIC_URL's %q", r.Host, u.Host)
		}
	}
	if len(m.ingress.Spec.TLS) == 0 || !slices.Contains(m.ingress.Spec.TLS[0].Hosts, u.Host) {
		t.Errorf("Ingress: no TLS for %s", u.Host)
	}
}

// TestNoUncheckedManifests: a manifest named .yml or .json would escape the checks.
func TestNoUncheckedManifests(t *testing.T) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if ext := filepath.Ext(e.Name()); ext == ".yml" || ext == ".json" {
			t.Errorf("%s: name it .yaml, which the checks read", e.Name())
		}
	}
}
