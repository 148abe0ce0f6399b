package bench

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// NewPod returns a realistic running pod: about a dozen labels, a handful of
// annotations, a ReplicaSet owner, an application container and a sidecar
// (each with env vars, resources, ports, probes and volume mounts), volumes,
// tolerations and a status with conditions and container statuses. The pod is
// a pure function of its arguments. Generation is left 0: the benchmarks use
// it to number update events.
//
// The benchmarks use this builder rather than apisim.NewPod so that they do not
// depend on a package that is still being written; both give pods of the same
// shape.
func NewPod(namespace, name string, seed int64) *corev1.Pod {
	r := rand.New(rand.NewPCG(uint64(seed), 0x5eed))
	app := fmt.Sprintf("svc-%d", r.IntN(200))
	tier := []string{"frontend", "backend", "worker", "cache"}[r.IntN(4)]
	hash := strconv.FormatUint(r.Uint64()&0xffffffffff, 36)
	created := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(r.IntN(1<<20)) * time.Second)
	node := fmt.Sprintf("node-%04d", r.IntN(500))
	ip := fmt.Sprintf("10.%d.%d.%d", r.IntN(256), r.IntN(256), 1+r.IntN(254))
	hex := func() string {
		return fmt.Sprintf("%016x%016x%016x%016x", r.Uint64(), r.Uint64(), r.Uint64(), r.Uint64())
	}
	qty := func(milli int64) resource.Quantity { return *resource.NewMilliQuantity(milli, resource.DecimalSI) }
	mem := func(mib int64) resource.Quantity { return *resource.NewQuantity(mib<<20, resource.BinarySI) }
	envs := func(prefix string, n int) []corev1.EnvVar {
		out := []corev1.EnvVar{{
			Name:      "POD_NAME",
			ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.name"}},
		}}
		for i := range n {
			out = append(out, corev1.EnvVar{Name: fmt.Sprintf("%s_SETTING_%d", prefix, i), Value: strconv.FormatUint(r.Uint64(), 16)})
		}
		return out
	}
	probe := func(path string) *corev1.Probe {
		return &corev1.Probe{
			ProbeHandler:     corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: path, Port: intstr.FromInt32(8080)}},
			PeriodSeconds:    10,
			TimeoutSeconds:   1,
			FailureThreshold: 3,
		}
	}
	start := metav1.NewTime(created.Add(2 * time.Second))
	ready := metav1.NewTime(created.Add(20 * time.Second))
	cpuReq, memReq := int64(50+r.IntN(950)), int64(64+r.IntN(1984))
	ctrl := true

	return &corev1.Pod{
		TypeMeta: metav1.TypeMeta{Kind: "Pod", APIVersion: "v1"},
		ObjectMeta: metav1.ObjectMeta{
			Name:              name,
			Namespace:         namespace,
			UID:               types.UID(fmt.Sprintf("%08x-%04x-%04x-%04x-%012x", r.Uint32(), r.Uint32()&0xffff, r.Uint32()&0xffff, r.Uint32()&0xffff, r.Uint64()&0xffffffffffff)),
			CreationTimestamp: metav1.NewTime(created),
			Labels: map[string]string{
				"app":                          app,
				"app.kubernetes.io/name":       app,
				"app.kubernetes.io/instance":   app + "-prod",
				"app.kubernetes.io/component":  tier,
				"app.kubernetes.io/managed-by": "helm",
				"app.kubernetes.io/version":    fmt.Sprintf("v1.%d.%d", r.IntN(40), r.IntN(10)),
				"tier":                         tier,
				"team":                         []string{"payments", "search", "identity", "platform"}[r.IntN(4)],
				"environment":                  "production",
				"pod-template-hash":            hash,
			},
			Annotations: map[string]string{
				"kubectl.kubernetes.io/default-container": "app",
				"prometheus.io/scrape":                    "true",
				"prometheus.io/port":                      "9090",
				"checksum/config":                         hex(),
				"checksum/secret":                         hex(),
			},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "apps/v1", Kind: "ReplicaSet", Name: app + "-" + hash,
				UID: types.UID(fmt.Sprintf("rs-%x", r.Uint64())), Controller: &ctrl, BlockOwnerDeletion: &ctrl,
			}},
		},
		Spec: corev1.PodSpec{
			NodeName:           node,
			ServiceAccountName: app,
			Containers: []corev1.Container{
				{
					Name:  "app",
					Image: fmt.Sprintf("registry.example.com/%s:v1.%d", app, r.IntN(100)),
					Args:  []string{"--config=/etc/app/config.yaml", "--metrics-addr=:9090", "--log-level=info"},
					Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080, Protocol: corev1.ProtocolTCP}, {Name: "metrics", ContainerPort: 9090, Protocol: corev1.ProtocolTCP}},
					Env:   envs("APP", 6+r.IntN(6)),
					Resources: corev1.ResourceRequirements{
						Requests: corev1.ResourceList{corev1.ResourceCPU: qty(cpuReq), corev1.ResourceMemory: mem(memReq)},
						Limits:   corev1.ResourceList{corev1.ResourceCPU: qty(2 * cpuReq), corev1.ResourceMemory: mem(memReq)},
					},
					VolumeMounts: []corev1.VolumeMount{
						{Name: "config", MountPath: "/etc/app", ReadOnly: true},
						{Name: "kube-api-access", MountPath: "/var/run/secrets/kubernetes.io/serviceaccount", ReadOnly: true},
					},
					LivenessProbe:            probe("/healthz"),
					ReadinessProbe:           probe("/readyz"),
					TerminationMessagePath:   "/dev/termination-log",
					TerminationMessagePolicy: corev1.TerminationMessageReadFile,
					ImagePullPolicy:          corev1.PullIfNotPresent,
				},
				{
					Name:  "proxy",
					Image: fmt.Sprintf("registry.example.com/envoy:1.%d.%d", 28+r.IntN(4), r.IntN(5)),
					Args:  []string{"--config-path=/etc/envoy/envoy.yaml", "--drain-time-s=30"},
					Ports: []corev1.ContainerPort{{Name: "proxy", ContainerPort: 15001, Protocol: corev1.ProtocolTCP}},
					Env:   envs("PROXY", 3),
					Resources: corev1.ResourceRequirements{
						Requests: corev1.ResourceList{corev1.ResourceCPU: qty(100), corev1.ResourceMemory: mem(128)},
						Limits:   corev1.ResourceList{corev1.ResourceCPU: qty(500), corev1.ResourceMemory: mem(256)},
					},
					VolumeMounts:             []corev1.VolumeMount{{Name: "envoy", MountPath: "/etc/envoy", ReadOnly: true}},
					TerminationMessagePath:   "/dev/termination-log",
					TerminationMessagePolicy: corev1.TerminationMessageReadFile,
					ImagePullPolicy:          corev1.PullIfNotPresent,
				},
			},
			Volumes: []corev1.Volume{
				{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: app + "-config"}}}},
				{Name: "envoy", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "envoy-" + app}}}},
				{Name: "kube-api-access", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
					{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token"}},
					{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "kube-root-ca.crt"}, Items: []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}}}},
				}}}},
			},
			Tolerations: []corev1.Toleration{
				{Key: "node.kubernetes.io/not-ready", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute},
				{Key: "node.kubernetes.io/unreachable", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute},
			},
			RestartPolicy: corev1.RestartPolicyAlways,
			DNSPolicy:     corev1.DNSClusterFirst,
			SchedulerName: corev1.DefaultSchedulerName,
		},
		Status: corev1.PodStatus{
			Phase: corev1.PodRunning,
			Conditions: []corev1.PodCondition{
				{Type: corev1.PodInitialized, Status: corev1.ConditionTrue, LastTransitionTime: start},
				{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: ready},
				{Type: corev1.ContainersReady, Status: corev1.ConditionTrue, LastTransitionTime: ready},
				{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(created)},
			},
			HostIP:    fmt.Sprintf("172.16.%d.%d", r.IntN(256), 1+r.IntN(254)),
			PodIP:     ip,
			PodIPs:    []corev1.PodIP{{IP: ip}},
			StartTime: &start,
			QOSClass:  corev1.PodQOSBurstable,
			ContainerStatuses: []corev1.ContainerStatus{
				{Name: "app", Ready: true, Image: "registry.example.com/" + app, ImageID: "sha256:" + hex(), ContainerID: "containerd://" + hex(),
					State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: start}}},
				{Name: "proxy", Ready: true, Image: "registry.example.com/envoy", ImageID: "sha256:" + hex(), ContainerID: "containerd://" + hex(),
					State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: start}}},
			},
		},
	}
}

// podSet is a built set of pods with their keys, shared by every benchmark of
// a process that asks for the same size (building 100k pods takes seconds).
type podSet struct {
	pods       []*corev1.Pod
	keys       []string // "ns/name", by index
	namespaces []string
}

var podCache struct {
	sync.Mutex
	sets map[[2]int]*podSet
}

// Pods returns n pods spread round-robin over the given number of namespaces,
// built once per process. Pod i is "ns-<i mod namespaces>/pod-<i>".
func pods(n, namespaces int) *podSet {
	podCache.Lock()
	defer podCache.Unlock()
	if s := podCache.sets[[2]int{n, namespaces}]; s != nil {
		return s
	}
	s := &podSet{pods: make([]*corev1.Pod, n), keys: make([]string, n)}
	for i := range namespaces {
		s.namespaces = append(s.namespaces, "ns-"+strconv.Itoa(i))
	}
	for i := range n {
		ns := s.namespaces[i%namespaces]
		name := "pod-" + strconv.Itoa(i)
		s.pods[i] = NewPod(ns, name, int64(i))
		s.keys[i] = ns + "/" + name
	}
	if podCache.sets == nil {
		podCache.sets = make(map[[2]int]*podSet)
	}
	podCache.sets[[2]int{n, namespaces}] = s
	return s
}
