package apisim

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// seeded returns the random source of a builder: a pure function of seed
// and of the builder (salt), so that builders given one seed differ.
func seeded(seed int64, salt uint64) *rand.Rand {
	return rand.New(rand.NewPCG(uint64(seed), 0x9e3779b97f4a7c15^salt))
}

// NewConfigMap returns a realistic configmap of about 2–4 KB of JSON, as a
// Helm release leaves them: labels, annotations, and data entries holding a
// YAML configuration, a properties file, a JSON feature-flag document and
// plain settings. Deterministic per (namespace, name, seed); resourceVersion,
// uid and creationTimestamp are left for the store.
func NewConfigMap(namespace, name string, seed int64) *corev1.ConfigMap {
	r := seeded(seed, 1)
	pick := func(s []string) string { return s[r.IntN(len(s))] }
	app := fmt.Sprintf("%s-%s-%d", pick(teams), pick([]string{"api", "web", "svc", "worker"}), r.IntN(50))
	release := app + "-" + pick(envs)

	var cfg strings.Builder
	fmt.Fprintf(&cfg, "server:\n  port: %d\n  readTimeout: %ds\n  writeTimeout: %ds\n", 8000+r.IntN(1000), 5+r.IntN(60), 5+r.IntN(60))
	fmt.Fprintf(&cfg, "logging:\n  level: %s\n  format: json\n", pick([]string{"debug", "info", "warn"}))
	cfg.WriteString("upstreams:\n")
	for i := range 4 + r.IntN(12) {
		fmt.Fprintf(&cfg, "  - name: %s-%d\n    url: http://%s-%d.%s.svc.cluster.local:%d\n    timeout: %dms\n    retries: %d\n",
			pick(teams), i, pick(teams), r.IntN(20), namespace, 8000+r.IntN(1000), 100*(1+r.IntN(30)), r.IntN(5))
	}
	var props strings.Builder
	for i := range 8 + r.IntN(24) {
		fmt.Fprintf(&props, "%s.%s.%d=%s\n", pick(teams), pick([]string{"pool.size", "cache.ttl", "batch.limit", "feature"}), i, strconv.Itoa(r.IntN(100000)))
	}
	var flags strings.Builder
	flags.WriteString("{")
	for i := range 3 + r.IntN(10) {
		if i > 0 {
			flags.WriteString(",")
		}
		fmt.Fprintf(&flags, "%q:{\"enabled\":%v,\"rollout\":%d}", fmt.Sprintf("flag-%s-%d", pick(teams), i), r.IntN(2) == 0, r.IntN(101))
	}
	flags.WriteString("}")

	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{
			Name:      name,
			Namespace: namespace,
			Labels: map[string]string{
				"app":                          app,
				"app.kubernetes.io/name":       app,
				"app.kubernetes.io/instance":   release,
				"app.kubernetes.io/managed-by": "Helm",
				"app.kubernetes.io/part-of":    pick(teams),
				"environment":                  pick(envs),
			},
			Annotations: map[string]string{
				"meta.helm.sh/release-name":      release,
				"meta.helm.sh/release-namespace": namespace,
				"checksum/values":                fmt.Sprintf("%016x%016x", r.Uint64(), r.Uint64()),
			},
		},
		Data: map[string]string{
			"config.yaml":            cfg.String(),
			"application.properties": props.String(),
			"feature-flags.json":     flags.String(),
			"LOG_LEVEL":              pick([]string{"debug", "info", "warn"}),
			"GOMAXPROCS":             strconv.Itoa(1 + r.IntN(8)),
		},
	}
}

// NewDeployment returns a realistic Deployment of about 7–10 KB of JSON: its
// pod template is the spec of NewPod(namespace, name, seed) with the pod's
// labels and annotations (but not its pod-template-hash), with a selector,
// rolling-update strategy and the status a settled rollout has.
// Deterministic per (namespace, name, seed); resourceVersion, uid and
// creationTimestamp are left for the store.
func NewDeployment(namespace, name string, seed int64) *appsv1.Deployment {
	pod := NewPod(namespace, name, seed, PodOptions{})
	r := seeded(seed, 2)
	labels := map[string]string{}
	for k, v := range pod.Labels {
		if k != "pod-template-hash" {
			labels[k] = v
		}
	}
	spec := pod.Spec
	spec.NodeName = ""
	replicas := int32(1 + r.IntN(10))
	generation := int64(1 + r.IntN(20))
	created := podEpoch.Add(time.Duration(r.IntN(86400*30)) * time.Second)
	progressed := created.Add(time.Duration(1+r.IntN(600)) * time.Second)
	maxSurge, maxUnavailable := intstr.FromString("25%"), intstr.FromString("25%")
	condition := func(t appsv1.DeploymentConditionType, reason, msg string, at time.Time) appsv1.DeploymentCondition {
		return appsv1.DeploymentCondition{Type: t, Status: corev1.ConditionTrue, Reason: reason, Message: msg,
			LastUpdateTime: metav1.NewTime(at), LastTransitionTime: metav1.NewTime(at)}
	}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{
			Name:       name,
			Namespace:  namespace,
			Generation: generation,
			Labels:     labels,
			Annotations: map[string]string{
				"deployment.kubernetes.io/revision": strconv.FormatInt(generation, 10),
				"meta.helm.sh/release-name":         labels["app.kubernetes.io/instance"],
				"meta.helm.sh/release-namespace":    namespace,
			},
		},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": labels["app"]}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels, Annotations: pod.Annotations},
				Spec:       spec,
			},
			Strategy: appsv1.DeploymentStrategy{
				Type:          appsv1.RollingUpdateDeploymentStrategyType,
				RollingUpdate: &appsv1.RollingUpdateDeployment{MaxSurge: &maxSurge, MaxUnavailable: &maxUnavailable},
			},
			RevisionHistoryLimit:    ptrTo(int32(10)),
			ProgressDeadlineSeconds: ptrTo(int32(600)),
		},
		Status: appsv1.DeploymentStatus{
			ObservedGeneration: generation,
			Replicas:           replicas,
			UpdatedReplicas:    replicas,
			ReadyReplicas:      replicas,
			AvailableReplicas:  replicas,
			Conditions: []appsv1.DeploymentCondition{
				condition(appsv1.DeploymentAvailable, "MinimumReplicasAvailable", "Deployment has minimum availability.", progressed),
				condition(appsv1.DeploymentProgressing, "NewReplicaSetAvailable",
					fmt.Sprintf("ReplicaSet %q has successfully progressed.", pod.OwnerReferences[0].Name), progressed),
			},
		},
	}
}

// NewWidget returns a custom resource of kind WidgetKind of about 1 KB of
// JSON, shaped like an operator's resource: labels, annotations, a spec
// with scalars, a selector, ports, a settings map and tags, and a status
// with conditions. Values are JSON types (int64, float64, string, bool,
// maps, slices) as unstructured objects require, and floats are never whole
// numbers, so an object equals itself after a JSON round trip (which turns
// 12.0 into 12). Deterministic per
// (namespace, name, seed); resourceVersion, uid and creationTimestamp are
// left for the store.
func NewWidget(namespace, name string, seed int64) *unstructured.Unstructured {
	r := seeded(seed, 3)
	pick := func(s []string) string { return s[r.IntN(len(s))] }
	app := fmt.Sprintf("%s-widget-%d", pick(teams), r.IntN(50))
	generation := int64(1 + r.IntN(10))
	at := podEpoch.Add(time.Duration(r.IntN(86400*30)) * time.Second).Format(time.RFC3339)

	ports := []any{}
	for i := range 1 + r.IntN(4) {
		ports = append(ports, map[string]any{"name": fmt.Sprintf("port-%d", i), "port": int64(8000 + r.IntN(1000)), "protocol": "TCP"})
	}
	settings := map[string]any{}
	for i := range 4 + r.IntN(12) {
		settings[fmt.Sprintf("%s-%d", pick([]string{"timeout", "threshold", "ratio", "mode"}), i)] = []any{
			int64(r.IntN(1000)), float64(r.IntN(100)) + 0.25, pick([]string{"fast", "safe", "auto"}), r.IntN(2) == 0,
		}[r.IntN(4)]
	}
	tags := []any{}
	for range 1 + r.IntN(5) {
		tags = append(tags, pick(teams))
	}
	u := &unstructured.Unstructured{Object: map[string]any{
		"metadata": map[string]any{
			"name":       name,
			"namespace":  namespace,
			"generation": generation,
			"labels": map[string]any{
				"app":                          app,
				"app.kubernetes.io/managed-by": "widget-operator",
				"tier":                         pick(tiers),
				"environment":                  pick(envs),
			},
			"annotations": map[string]any{
				"widgets.example.shardinformer.io/owner": pick(teams),
				"checksum/spec":                          fmt.Sprintf("%016x", r.Uint64()),
			},
		},
		"spec": map[string]any{
			"size":     int64(1 + r.IntN(100)),
			"color":    pick([]string{"red", "green", "blue", "amber"}),
			"replicas": int64(1 + r.IntN(5)),
			"paused":   r.IntN(10) == 0,
			"selector": map[string]any{"matchLabels": map[string]any{"app": app}},
			"ports":    ports,
			"settings": settings,
			"tags":     tags,
		},
		"status": map[string]any{
			"phase":              pick([]string{"Ready", "Ready", "Ready", "Reconciling"}),
			"observedGeneration": generation,
			"conditions": []any{map[string]any{
				"type": "Ready", "status": "True", "reason": "Reconciled",
				"message": "all " + app + " replicas are available", "lastTransitionTime": at,
			}},
		},
	}}
	u.SetGroupVersionKind(WidgetKind)
	return u
}
