package check

import (
	"net"
	"net/url"
	"slices"
	"strconv"
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

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
