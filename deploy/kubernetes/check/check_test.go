package check

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
)

// dir is deploy/kubernetes, the folder above this module.
const dir = ".."

// manifests holds the decoded objects of dir: exactly one of each kind that the checks compare,
// but the two Secrets of one file.
type manifests struct {
	deployment    *appsv1.Deployment
	service       *corev1.Service
	secret        *corev1.Secret // petstore: the serving user's database address, and Redis's
	migrateSecret *corev1.Secret // petstore-migrate: the migrating user's database address
	job           *batchv1.Job   // the rollback of a migration, created by hand
	pdb           *policyv1.PodDisruptionBudget
	hpa           *autoscalingv2.HorizontalPodAutoscaler
	netpol        *networkingv1.NetworkPolicy
	ingress       *networkingv1.Ingress
	kustomization *Kustomization
	files         map[string]string // the file of each kind, by kind
}

// load decodes every manifest of dir strictly (a failure here is a typo or an unknown kind) and
// requires one of each kind, and the Secrets petstore and petstore-migrate in one file.
func load(t *testing.T) manifests {
	t.Helper()
	objs, err := ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	m := manifests{files: map[string]string{}}
	secrets := map[string]**corev1.Secret{"petstore": &m.secret, "petstore-migrate": &m.migrateSecret}
	for _, o := range objs {
		var kind string
		switch v := o.Obj.(type) {
		case *appsv1.Deployment:
			kind, m.deployment = "Deployment", v
		case *corev1.Service:
			kind, m.service = "Service", v
		case *corev1.Secret:
			p := secrets[v.Name]
			if p == nil || *p != nil {
				t.Fatalf("%s: Secret %s: want one petstore and one petstore-migrate", o.File, v.Name)
			}
			*p = v
			if m.files["Secret"] == o.File {
				continue // the file's second Secret
			}
			kind = "Secret"
		case *batchv1.Job:
			kind, m.job = "Job", v
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
	if len(m.files) != len(types)-len(componentKinds) || m.secret == nil || m.migrateSecret == nil {
		t.Fatalf("want one manifest of each of %d kinds, and two Secrets; got %v", len(types)-len(componentKinds), m.files)
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
		"operator's field": `
apiVersion: monitoring.coreos.com/v1
kind: PodMonitor
metadata: {name: petstore}
spec:
  selector: {matchLabels: {app: petstore}}
  podMetricEndpoints: [{port: metrics}]
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

// TestKustomization: `kubectl apply -k` applies every manifest but the example Secrets, which
// would overwrite the real ones, and the rollback Job, which is created by hand.
func TestKustomization(t *testing.T) {
	m := load(t)
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, f := range files {
		if b := filepath.Base(f); b != m.files["Kustomization"] && b != m.files["Secret"] && b != m.files["Job"] {
			want = append(want, b)
		}
	}
	got := slices.Sorted(slices.Values(m.kustomization.Resources))
	if !slices.Equal(got, want) {
		t.Errorf("kustomization.yaml resources: got %v, want %v (every manifest but the example Secrets and the Job)", got, want)
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
