// Package check reads the Kubernetes manifests of deploy/kubernetes offline, with no cluster:
// each document is decoded strictly into its k8s.io/api type (the Prometheus Operator's for the
// prometheus-operator component), chosen by apiVersion and kind, so that an unknown kind, a
// mistyped or misplaced field and a field given twice all fail. Its
// tests run the decoder on every file and check that the manifests agree with each other and
// with the service's shutdown. It is a module of its own so that the service's module gains no
// dependency: `make ops-check` runs it.
package check

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

// Kustomization is the part of kustomize's Kustomization that kustomization.yaml uses. Decoded
// strictly like the rest, a field not named here fails: add it here when the file needs it.
type Kustomization struct {
	APIVersion string   `json:"apiVersion"`
	Kind       string   `json:"kind"`
	Namespace  string   `json:"namespace,omitempty"`
	Resources  []string `json:"resources"`
	Components []string `json:"components,omitempty"`
}

// Component is the part of kustomize's Component (an optional part that a Kustomization's
// components list takes in) that the folders of components use, decoded strictly likewise.
type Component struct {
	APIVersion string   `json:"apiVersion"`
	Kind       string   `json:"kind"`
	Resources  []string `json:"resources"`
}

// types gives, for each apiVersion and kind the folder may hold, a new value to decode into.
var types = map[metav1.TypeMeta]func() any{
	{APIVersion: "apps/v1", Kind: "Deployment"}:                            func() any { return new(appsv1.Deployment) },
	{APIVersion: "v1", Kind: "Service"}:                                    func() any { return new(corev1.Service) },
	{APIVersion: "v1", Kind: "Secret"}:                                     func() any { return new(corev1.Secret) },
	{APIVersion: "policy/v1", Kind: "PodDisruptionBudget"}:                 func() any { return new(policyv1.PodDisruptionBudget) },
	{APIVersion: "autoscaling/v2", Kind: "HorizontalPodAutoscaler"}:        func() any { return new(autoscalingv2.HorizontalPodAutoscaler) },
	{APIVersion: "networking.k8s.io/v1", Kind: "NetworkPolicy"}:            func() any { return new(networkingv1.NetworkPolicy) },
	{APIVersion: "networking.k8s.io/v1", Kind: "Ingress"}:                  func() any { return new(networkingv1.Ingress) },
	{APIVersion: "batch/v1", Kind: "Job"}:                                  func() any { return new(batchv1.Job) },
	{APIVersion: "kustomize.config.k8s.io/v1beta1", Kind: "Kustomization"}: func() any { return new(Kustomization) },
	{APIVersion: "kustomize.config.k8s.io/v1alpha1", Kind: "Component"}:    func() any { return new(Component) },
	{APIVersion: "monitoring.coreos.com/v1", Kind: "PodMonitor"}:           func() any { return new(monitoringv1.PodMonitor) },
	{APIVersion: "monitoring.coreos.com/v1", Kind: "PrometheusRule"}:       func() any { return new(monitoringv1.PrometheusRule) },
}

// Object is one decoded document: File is the file's name, Obj a pointer to its type.
type Object struct {
	File string
	Obj  any
}

// separator is a line of three dashes between YAML documents.
var separator = regexp.MustCompile(`(?m)^---[ \t]*$`)

// Decode decodes every document of data strictly; name is for the errors. A document of
// comments and blank lines only is skipped.
func Decode(name string, data []byte) ([]Object, error) {
	var objs []Object
	for i, doc := range separator.Split(string(data), -1) {
		var probe any
		if err := yaml.Unmarshal([]byte(doc), &probe); err != nil {
			return nil, fmt.Errorf("%s: document %d: %w", name, i+1, err)
		}
		if probe == nil {
			continue
		}
		var tm metav1.TypeMeta
		if err := yaml.Unmarshal([]byte(doc), &tm); err != nil {
			return nil, fmt.Errorf("%s: document %d: %w", name, i+1, err)
		}
		newObj, ok := types[tm]
		if !ok {
			return nil, fmt.Errorf("%s: document %d: unknown kind %q of apiVersion %q", name, i+1, tm.Kind, tm.APIVersion)
		}
		obj := newObj()
		if err := decodeStrict([]byte(doc), obj); err != nil {
			return nil, fmt.Errorf("%s: document %d (%s): %w", name, i+1, tm.Kind, err)
		}
		objs = append(objs, Object{File: name, Obj: obj})
	}
	return objs, nil
}

// decodeStrict decodes one YAML document into obj as the API server's strict field validation
// does (apimachinery's strict serializer): YAML to JSON, failing on a key given twice, then JSON
// into obj with keys matched case-sensitively, failing on an unknown or duplicate one.
// sigs.k8s.io/yaml.UnmarshalStrict alone would not do: it matches keys as encoding/json does,
// regardless of case, so that podselector would pass for podSelector.
func decodeStrict(doc []byte, obj any) error {
	data, err := yaml.YAMLToJSONStrict(doc)
	if err != nil {
		return err
	}
	strict, err := json.UnmarshalStrict(data, obj)
	if err != nil {
		return err
	}
	return errors.Join(strict...)
}

// ReadDir decodes every *.yaml file of dir, in the order of their names.
func ReadDir(dir string) ([]Object, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return nil, err
	}
	sort.Strings(files)
	var objs []Object
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		o, err := Decode(filepath.Base(f), data)
		if err != nil {
			return nil, err
		}
		objs = append(objs, o...)
	}
	return objs, nil
}
