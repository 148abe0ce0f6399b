package apisim

import (
	"crypto/sha256"
	"fmt"
	"hash/fnv"
	"maps"
	"math/rand/v2"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// PodOptions tunes NewPod. The zero value gives a typical Deployment-owned
// pod of about 9–10.5 KB of JSON (5.5 KB of protobuf), without managedFields.
type PodOptions struct {
	// ManagedFields adds server-side-apply field ownership entries (one for
	// kube-controller-manager's create, one for the kubelet's status
	// updates), as a real API server returns them unless a client strips
	// them. Adds roughly 5–7 KB of JSON.
	ManagedFields bool
	// Nodes is the number of distinct spec.nodeName values pods are spread
	// over ("node-0000" …). Zero means 100.
	Nodes int
	// Apps is the number of distinct "app" label values (and owning
	// ReplicaSets) pods are spread over. Zero means 50.
	Apps int
}

// podEpoch is the fixed base of every timestamp NewPod writes, so that a pod
// is a pure function of its arguments.
var podEpoch = time.Date(2026, time.March, 2, 9, 0, 0, 0, time.UTC)

var (
	tiers     = []string{"frontend", "backend", "cache", "worker", "batch"}
	teams     = []string{"payments", "search", "checkout", "identity", "platform", "ads", "ml-infra"}
	envs      = []string{"production", "staging", "canary"}
	registry  = []string{"registry.example.com/prod", "ghcr.io/example", "us-docker.pkg.dev/example-prod/images"}
	sidecars  = []string{"envoy", "otel-collector", "fluent-bit", "vault-agent"}
	hashChars = "bcdfghjklmnpqrstvwxz2456789"
)

// NewPod returns a realistic, fully populated pod in phase Running: labels
// (app, tier, pod-template-hash, …), annotations, a ReplicaSet
// ownerReference, an application container and a sidecar with env vars,
// resources, probes, ports and volume mounts, volumes (including the
// projected service-account token volume every pod gets), tolerations,
// affinity, and a status with conditions, container statuses and pod IPs.
//
// The result is deterministic: the same (namespace, name, seed, opts) always
// yields an identical pod. ResourceVersion, UID and CreationTimestamp are
// left for the store to assign. The seed picks one of opts.Apps apps, and
// pods of one app are replicas of its template, as a Deployment's pods are:
// the same labels, annotations, containers, env, resources and volumes but
// for what each replica gets of its own (name, node, IPs, times, the
// service-account token volume's name, container IDs, restart counts); in
// one namespace they have one owner (the ReplicaSet's UID derives from the
// app and the namespace). Different apps vary sizes, names and values the
// way different workloads do.
func NewPod(namespace, name string, seed int64, opts PodOptions) *corev1.Pod {
	if opts.Nodes <= 0 {
		opts.Nodes = 100
	}
	if opts.Apps <= 0 {
		opts.Apps = 50
	}
	r := rand.New(rand.NewPCG(uint64(seed), 0x9e3779b97f4a7c15))
	appIdx := r.IntN(opts.Apps)
	// The pods of one app are replicas of one template: everything a
	// Deployment's template fixes (labels, annotations, images, args, env,
	// resources, security context) is drawn from a source seeded by the
	// app alone, so that pods of one app differ only where replicas differ
	// (name, node, IPs, times, the token volume's name, status). The
	// ReplicaSet — the owner's UID — is the app's in the pod's namespace.
	tr := rand.New(rand.NewPCG(uint64(appIdx), 0x2545f4914f6cdd1d))
	pick := func(s []string) string { return s[tr.IntN(len(s))] }
	app := fmt.Sprintf("%s-%s-%d", pick(teams), pick([]string{"api", "web", "svc", "consumer", "gateway", "indexer"}), appIdx)
	tier := tiers[appIdx%len(tiers)]
	templateHash := randomSuffix(tr, 10)
	rsName := app + "-" + templateHash
	version := fmt.Sprintf("v%d.%d.%d", 1+appIdx%4, tr.IntN(30), tr.IntN(12))
	nodeIdx := r.IntN(opts.Nodes)
	node := fmt.Sprintf("node-%04d", nodeIdx)
	created := podEpoch.Add(time.Duration(r.IntN(86400*30)) * time.Second)
	started := created.Add(time.Duration(1+r.IntN(5)) * time.Second)
	ready := started.Add(time.Duration(5+r.IntN(40)) * time.Second)
	restarted := podEpoch.Add(-time.Duration(1+tr.IntN(86400)) * time.Second)
	uid := func(r *rand.Rand) types.UID {
		return types.UID(fmt.Sprintf("%08x-%04x-4%03x-%04x-%012x", r.Uint32(), r.Uint32()&0xffff, r.Uint32()&0xfff, 0x8000|r.Uint32()&0x3fff, r.Uint64()&0xffffffffffff))
	}
	nsHash := fnv.New64a()
	nsHash.Write([]byte(namespace))
	ownerUID := uid(rand.New(rand.NewPCG(uint64(appIdx), nsHash.Sum64())))
	sha := func(r *rand.Rand) string {
		return fmt.Sprintf("%016x%016x%016x%016x", r.Uint64(), r.Uint64(), r.Uint64(), r.Uint64())
	}
	image := fmt.Sprintf("%s/%s:%s", pick(registry), app[:len(app)-len(strconv.Itoa(appIdx))-1], version)
	sidecar := pick(sidecars)
	sidecarImage := fmt.Sprintf("%s/%s:1.%d.%d", pick(registry), sidecar, 20+tr.IntN(10), tr.IntN(5))
	podIP := fmt.Sprintf("10.%d.%d.%d", 64+r.IntN(64), r.IntN(256), 2+r.IntN(250))
	// A pod's host IP is its node's address, shared by every pod on the
	// node (the kubelet reports the node's IP in status.hostIP).
	hostIP := fmt.Sprintf("172.20.%d.%d", nodeIdx/250, 2+nodeIdx%250)
	saName := app
	// The service account admission plugin names each pod's token volume
	// anew.
	tokenVolume := "kube-api-access-" + randomSuffix(r, 5)

	labels := map[string]string{
		"app":                          app,
		"app.kubernetes.io/name":       app,
		"app.kubernetes.io/instance":   app + "-" + pick(envs),
		"app.kubernetes.io/version":    version,
		"app.kubernetes.io/component":  tier,
		"app.kubernetes.io/part-of":    pick(teams),
		"app.kubernetes.io/managed-by": "helm",
		"tier":                         tier,
		"team":                         pick(teams),
		"environment":                  pick(envs),
		"pod-template-hash":            templateHash,
	}
	annotations := map[string]string{
		"kubectl.kubernetes.io/default-container":        "app",
		"kubectl.kubernetes.io/restartedAt":              restarted.Format(time.RFC3339),
		"prometheus.io/scrape":                           "true",
		"prometheus.io/port":                             "9090",
		"prometheus.io/path":                             "/metrics",
		"checksum/config":                                sha(tr),
		"checksum/secrets":                               sha(tr),
		"cluster-autoscaler.kubernetes.io/safe-to-evict": strconv.FormatBool(tr.IntN(2) == 0),
		"sidecar.istio.io/status": fmt.Sprintf(`{"initContainers":null,"containers":[%q],"volumes":["%s-certs","%s-config"],"imagePullSecrets":null,"revision":"default"}`,
			sidecar, sidecar, sidecar),
	}

	// Env vars are part of the pod template, so every replica of a
	// ReplicaSet has the same list with the same values (a controller
	// copies the template into each pod it creates). They are drawn from a
	// source seeded by the template — the app, whose pods share one
	// template hash — and the container; a value naming a service names it
	// in the pod's namespace, where a ReplicaSet's pods all live.
	env := func(minN, spread int, container string) []corev1.EnvVar {
		h := fnv.New64a()
		h.Write([]byte(container))
		r := rand.New(rand.NewPCG(uint64(appIdx), h.Sum64()))
		n := minN + r.IntN(spread)
		prefix := "APP"
		if container != "app" {
			prefix = "SIDECAR"
		}
		out := make([]corev1.EnvVar, 0, n+4)
		out = append(out,
			corev1.EnvVar{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.name"}}},
			corev1.EnvVar{Name: "POD_NAMESPACE", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.namespace"}}},
			corev1.EnvVar{Name: "NODE_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "spec.nodeName"}}},
			corev1.EnvVar{Name: "DB_PASSWORD", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
				LocalObjectReference: corev1.LocalObjectReference{Name: app + "-db"}, Key: "password"}}},
		)
		for i := 0; i < n; i++ {
			var v string
			switch r.IntN(4) {
			case 0:
				v = strconv.Itoa(r.IntN(100000))
			case 1:
				v = strconv.FormatBool(r.IntN(2) == 0)
			case 2:
				v = fmt.Sprintf("http://%s-%d.%s.svc.cluster.local:%d", teams[r.IntN(len(teams))], r.IntN(20), namespace, 8000+r.IntN(1000))
			default:
				v = fmt.Sprintf("%x", r.Uint64())
			}
			kind := []string{"TIMEOUT", "ENABLED", "ENDPOINT", "TOKEN_ID", "POOL_SIZE", "FEATURE"}[r.IntN(6)]
			out = append(out, corev1.EnvVar{Name: fmt.Sprintf("%s_%s_%d", prefix, kind, i), Value: v})
		}
		return out
	}
	probe := func(path string, port int32, delay int32) *corev1.Probe {
		return &corev1.Probe{
			ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{
				Path: path, Port: intstr.FromInt32(port), Scheme: corev1.URISchemeHTTP}},
			InitialDelaySeconds: delay, TimeoutSeconds: 1, PeriodSeconds: 10, SuccessThreshold: 1, FailureThreshold: 3,
		}
	}
	cpu := 100 * (1 + tr.IntN(20))
	mem := 128 * (1 + tr.IntN(16))
	falseVal, trueVal := false, true
	runAsUser := int64(1000 + tr.IntN(1000))
	grace := int64(30)
	toleration := int64(300)
	tokenExpiry := int64(3607)
	defaultMode := int32(420)

	containers := []corev1.Container{
		{
			Name:  "app",
			Image: image,
			Args:  []string{"--config=/etc/" + app + "/config.yaml", "--log-level=info", "--metrics-addr=:9090", fmt.Sprintf("--workers=%d", 1+tr.IntN(16))},
			Ports: []corev1.ContainerPort{
				{Name: "http", ContainerPort: 8080, Protocol: corev1.ProtocolTCP},
				{Name: "grpc", ContainerPort: 9000, Protocol: corev1.ProtocolTCP},
				{Name: "metrics", ContainerPort: 9090, Protocol: corev1.ProtocolTCP},
			},
			Env: templateEnv(envKey{appIdx, namespace, "app", 8, 16}, env),
			EnvFrom: []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{
				LocalObjectReference: corev1.LocalObjectReference{Name: app + "-env"}}}},
			Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{
					corev1.ResourceCPU:    *resource.NewMilliQuantity(int64(cpu), resource.DecimalSI),
					corev1.ResourceMemory: *resource.NewQuantity(int64(mem)<<20, resource.BinarySI),
				},
				Limits: corev1.ResourceList{
					corev1.ResourceCPU:    *resource.NewMilliQuantity(int64(2*cpu), resource.DecimalSI),
					corev1.ResourceMemory: *resource.NewQuantity(int64(mem)<<20, resource.BinarySI),
				},
			},
			VolumeMounts: []corev1.VolumeMount{
				{Name: "config", MountPath: "/etc/" + app, ReadOnly: true},
				{Name: "tls", MountPath: "/etc/tls", ReadOnly: true},
				{Name: "cache", MountPath: "/var/cache/" + app},
				{Name: tokenVolume, MountPath: "/var/run/secrets/kubernetes.io/serviceaccount", ReadOnly: true},
			},
			LivenessProbe:            probe("/healthz", 8080, 15),
			ReadinessProbe:           probe("/readyz", 8080, 5),
			TerminationMessagePath:   "/dev/termination-log",
			TerminationMessagePolicy: corev1.TerminationMessageReadFile,
			ImagePullPolicy:          corev1.PullIfNotPresent,
			SecurityContext: &corev1.SecurityContext{
				AllowPrivilegeEscalation: &falseVal, ReadOnlyRootFilesystem: &trueVal, RunAsNonRoot: &trueVal, RunAsUser: &runAsUser,
				Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
			},
		},
		{
			Name:  sidecar,
			Image: sidecarImage,
			Args:  []string{"--config-path=/etc/" + sidecar + "/config.yaml", "--concurrency=2"},
			Ports: []corev1.ContainerPort{{Name: "admin", ContainerPort: 15000, Protocol: corev1.ProtocolTCP}},
			Env:   templateEnv(envKey{appIdx, namespace, sidecar, 2, 8}, env),
			Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{
					corev1.ResourceCPU:    resource.MustParse("50m"),
					corev1.ResourceMemory: resource.MustParse("64Mi"),
				},
				Limits: corev1.ResourceList{
					corev1.ResourceCPU:    resource.MustParse("500m"),
					corev1.ResourceMemory: resource.MustParse("256Mi"),
				},
			},
			VolumeMounts: []corev1.VolumeMount{
				{Name: sidecar + "-config", MountPath: "/etc/" + sidecar, ReadOnly: true},
				{Name: sidecar + "-certs", MountPath: "/etc/certs", ReadOnly: true},
				{Name: tokenVolume, MountPath: "/var/run/secrets/kubernetes.io/serviceaccount", ReadOnly: true},
			},
			ReadinessProbe:           probe("/ready", 15000, 1),
			TerminationMessagePath:   "/dev/termination-log",
			TerminationMessagePolicy: corev1.TerminationMessageReadFile,
			ImagePullPolicy:          corev1.PullIfNotPresent,
		},
	}

	volumes := []corev1.Volume{
		{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: app + "-config"}, DefaultMode: &defaultMode}}},
		{Name: "tls", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: app + "-tls", DefaultMode: &defaultMode}}},
		{Name: "cache", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
		{Name: sidecar + "-config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: sidecar + "-config"}, DefaultMode: &defaultMode}}},
		{Name: sidecar + "-certs", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: sidecar + "-certs", DefaultMode: &defaultMode}}},
		{Name: tokenVolume, VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
			DefaultMode: &defaultMode,
			Sources: []corev1.VolumeProjection{
				{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{ExpirationSeconds: &tokenExpiry, Path: "token"}},
				{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "kube-root-ca.crt"},
					Items: []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}}}},
				{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{
					{Path: "namespace", FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.namespace"}}}}},
			},
		}}},
	}

	cond := func(t corev1.PodConditionType, at time.Time) corev1.PodCondition {
		return corev1.PodCondition{Type: t, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(at)}
	}
	cstatus := func(c corev1.Container) corev1.ContainerStatus {
		return corev1.ContainerStatus{
			Name:         c.Name,
			Ready:        true,
			RestartCount: int32(r.IntN(3)),
			Image:        c.Image,
			// The runtime reports the digest the image's tag resolved to:
			// the same in every pod that runs the image.
			ImageID:     c.Image[:indexByte(c.Image, ':')] + fmt.Sprintf("@sha256:%x", sha256.Sum256([]byte(c.Image))),
			ContainerID: "containerd://" + sha(r),
			Started:     &trueVal,
			State:       corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(started)}},
			VolumeMounts: func() []corev1.VolumeMountStatus {
				out := make([]corev1.VolumeMountStatus, 0, len(c.VolumeMounts))
				for _, m := range c.VolumeMounts {
					out = append(out, corev1.VolumeMountStatus{Name: m.Name, MountPath: m.MountPath, ReadOnly: m.ReadOnly})
				}
				return out
			}(),
		}
	}

	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:         name,
			GenerateName: rsName + "-",
			Namespace:    namespace,
			Labels:       labels,
			Annotations:  annotations,
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "apps/v1", Kind: "ReplicaSet", Name: rsName, UID: ownerUID,
				Controller: &trueVal, BlockOwnerDeletion: &trueVal,
			}},
		},
		Spec: corev1.PodSpec{
			Volumes:                       volumes,
			Containers:                    containers,
			RestartPolicy:                 corev1.RestartPolicyAlways,
			TerminationGracePeriodSeconds: &grace,
			DNSPolicy:                     corev1.DNSClusterFirst,
			NodeSelector:                  map[string]string{"kubernetes.io/os": "linux", "node.kubernetes.io/pool": tier},
			ServiceAccountName:            saName,
			DeprecatedServiceAccount:      saName,
			NodeName:                      node,
			SecurityContext:               &corev1.PodSecurityContext{FSGroup: &runAsUser, SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}},
			ImagePullSecrets:              []corev1.LocalObjectReference{{Name: "registry-credentials"}},
			Affinity: &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
				PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{
					Weight: 100,
					PodAffinityTerm: corev1.PodAffinityTerm{
						LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}},
						TopologyKey:   "kubernetes.io/hostname",
					},
				}},
			}},
			SchedulerName: corev1.DefaultSchedulerName,
			Tolerations: []corev1.Toleration{
				{Key: "node.kubernetes.io/not-ready", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: &toleration},
				{Key: "node.kubernetes.io/unreachable", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: &toleration},
				{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: tier, Effect: corev1.TaintEffectNoSchedule},
			},
			PriorityClassName:  "default-priority",
			Priority:           ptrTo(int32(1000)),
			EnableServiceLinks: &falseVal,
			PreemptionPolicy:   ptrTo(corev1.PreemptLowerPriority),
		},
		Status: corev1.PodStatus{
			Phase: corev1.PodRunning,
			Conditions: []corev1.PodCondition{
				cond(corev1.PodReadyToStartContainers, started),
				cond(corev1.PodInitialized, created),
				cond(corev1.PodReady, ready),
				cond(corev1.ContainersReady, ready),
				cond(corev1.PodScheduled, created),
			},
			HostIP:    hostIP,
			HostIPs:   []corev1.HostIP{{IP: hostIP}},
			PodIP:     podIP,
			PodIPs:    []corev1.PodIP{{IP: podIP}},
			StartTime: ptrTo(metav1.NewTime(created)),
			QOSClass:  corev1.PodQOSBurstable,
		},
	}
	pod.Status.ContainerStatuses = []corev1.ContainerStatus{cstatus(containers[0]), cstatus(containers[1])}
	if opts.ManagedFields {
		pod.ManagedFields = managedFields(pod, created, ready)
	}
	return pod
}

// managedFields builds the two field-ownership entries a Deployment-owned
// pod carries: the controller's create (spec and metadata) and the
// kubelet's status subresource updates.
func managedFields(pod *corev1.Pod, created, updated time.Time) []metav1.ManagedFieldsEntry {
	var spec, status []byte
	spec = append(spec, `{"f:metadata":{"f:generateName":{},"f:labels":{`...)
	for _, k := range sortedKeys(pod.Labels) {
		spec = append(spec, fmt.Sprintf(`"f:%s":{},`, k)...)
	}
	spec = append(spec[:len(spec)-1], `},"f:annotations":{`...)
	for _, k := range sortedKeys(pod.Annotations) {
		spec = append(spec, fmt.Sprintf(`"f:%s":{},`, k)...)
	}
	spec = append(spec[:len(spec)-1], fmt.Sprintf(`},"f:ownerReferences":{".":{},"k:{\"uid\":\"%s\"}":{}}},"f:spec":{`, pod.OwnerReferences[0].UID)...)
	for _, c := range pod.Spec.Containers {
		spec = append(spec, fmt.Sprintf(`"k:{\"name\":\"%s\"}":{".":{},"f:args":{},"f:env":{`, c.Name)...)
		for _, e := range c.Env {
			spec = append(spec, fmt.Sprintf(`"k:{\"name\":\"%s\"}":{".":{},"f:name":{},"f:value":{}},`, e.Name)...)
		}
		spec = append(spec[:len(spec)-1], `},"f:image":{},"f:imagePullPolicy":{},"f:name":{},"f:ports":{`...)
		for _, p := range c.Ports {
			spec = append(spec, fmt.Sprintf(`"k:{\"containerPort\":%d,\"protocol\":\"TCP\"}":{".":{},"f:containerPort":{},"f:name":{},"f:protocol":{}},`, p.ContainerPort)...)
		}
		spec = append(spec[:len(spec)-1], `},"f:resources":{".":{},"f:limits":{".":{},"f:cpu":{},"f:memory":{}},"f:requests":{".":{},"f:cpu":{},"f:memory":{}}},"f:terminationMessagePath":{},"f:terminationMessagePolicy":{},"f:volumeMounts":{`...)
		for _, m := range c.VolumeMounts {
			spec = append(spec, fmt.Sprintf(`"k:{\"mountPath\":\"%s\"}":{".":{},"f:mountPath":{},"f:name":{},"f:readOnly":{}},`, m.MountPath)...)
		}
		spec = append(spec[:len(spec)-1], `}},`...)
	}
	spec = append(spec, `"f:dnsPolicy":{},"f:enableServiceLinks":{},"f:restartPolicy":{},"f:schedulerName":{},"f:securityContext":{},"f:serviceAccount":{},"f:serviceAccountName":{},"f:terminationGracePeriodSeconds":{},"f:tolerations":{},"f:volumes":{`...)
	for _, v := range pod.Spec.Volumes {
		spec = append(spec, fmt.Sprintf(`"k:{\"name\":\"%s\"}":{".":{},"f:name":{}},`, v.Name)...)
	}
	spec = append(spec[:len(spec)-1], `}}}`...)

	status = append(status, `{"f:status":{"f:conditions":{`...)
	for _, c := range pod.Status.Conditions {
		status = append(status, fmt.Sprintf(`"k:{\"type\":\"%s\"}":{".":{},"f:lastProbeTime":{},"f:lastTransitionTime":{},"f:status":{},"f:type":{}},`, c.Type)...)
	}
	status = append(status[:len(status)-1], `},"f:containerStatuses":{},"f:hostIP":{},"f:hostIPs":{},"f:phase":{},"f:podIP":{},"f:podIPs":{".":{},"k:{\"ip\":\"`...)
	status = append(status, pod.Status.PodIP...)
	status = append(status, `\"}":{".":{},"f:ip":{}}},"f:startTime":{}}}`...)

	return []metav1.ManagedFieldsEntry{
		{Manager: "kube-controller-manager", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1",
			Time: ptrTo(metav1.NewTime(created)), FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: spec}},
		{Manager: "kubelet", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1",
			Time: ptrTo(metav1.NewTime(updated)), FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: status}, Subresource: "status"},
	}
}

func randomSuffix(r *rand.Rand, n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = hashChars[r.IntN(len(hashChars))]
	}
	return string(b)
}

func indexByte(s string, c byte) int {
	for i := len(s) - 1; i >= 0; i-- {
		if s[i] == c {
			return i
		}
	}
	return len(s)
}

func ptrTo[T any](v T) *T { return &v }

func sortedKeys(m map[string]string) []string {
	return slices.Sorted(maps.Keys(m))
}

// envKey names the env vars of one container of a pod template: NewPod's
// env closure is a pure function of these (its source is seeded by the app
// and the container; values name services in the namespace).
type envKey struct {
	app          int
	namespace    string
	container    string
	minN, spread int
}

// envCache memoizes the env vars of the templates NewPod has built
// (envKey → []corev1.EnvVar, never modified), so that the replicas of a
// template, which share them, do not format them again: formatting them
// was over a quarter of NewPod's work. At most envCacheMax templates are
// kept.
var (
	envCache    sync.Map
	envCacheLen atomic.Int64
)

const envCacheMax = 1 << 14

// templateEnv returns a private copy of the env vars k names, built by gen.
func templateEnv(k envKey, gen func(minN, spread int, container string) []corev1.EnvVar) []corev1.EnvVar {
	if v, ok := envCache.Load(k); ok {
		return copyEnv(v.([]corev1.EnvVar))
	}
	env := gen(k.minN, k.spread, k.container)
	if envCacheLen.Load() < envCacheMax {
		if _, loaded := envCache.LoadOrStore(k, copyEnv(env)); !loaded {
			envCacheLen.Add(1)
		}
	}
	return env
}

func copyEnv(env []corev1.EnvVar) []corev1.EnvVar {
	out := make([]corev1.EnvVar, len(env))
	for i := range env {
		env[i].DeepCopyInto(&out[i])
	}
	return out
}
