package diet

import (
	"reflect"
	"strings"
	"unsafe"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// Config selects the diet's steps; the zero Config is no diet. wire's
// options set it (WithDiet, WithInterning, …). A Config is a value: copy
// it freely.
type Config struct {
	// DropManagedFields: the codec cuts metadata.managedFields from the
	// bytes (or clears them after decoding); the diet itself does nothing
	// for it.
	DropManagedFields bool
	// Intern: strings that repeat across objects share one copy (intern.go).
	Intern bool
	// Compact: a pod's slices are moved into arrays of their exact length.
	Compact bool
	// Share: pods share their identical parts without maps (share.go,
	// shareproto.go) and the spec and status of their previous version
	// (versions.go).
	Share bool
	// ShareMaps: the parts with maps too (Share implied).
	ShareMaps bool
	// Classes are the field classes Intern interns (zero: InternDefault;
	// benchmarks measure them one by one).
	Classes InternClass
}

// Applier applies a Config to the objects of one ListerWatcher as they are
// decoded, with the caches the steps keep: one interner per decoder
// goroutine, and with sharing the table of the pods decoded last. Safe for
// concurrent use by the ListerWatcher's decoder goroutines (doc.go); used
// by pointer.
type Applier struct {
	Config
	// interners are the ListerWatcher's, at most one per worker.
	interners *interners
	// versions are the pods it decoded last, when sharing (versions.go).
	versions *versions
}

// New returns the Applier of c for a ListerWatcher with workers decoder
// goroutines.
func New(c Config, workers int) *Applier {
	if c.Classes == 0 {
		c.Classes = InternDefault
	}
	a := &Applier{Config: c, interners: newInterners(workers)}
	if c.Sharing() {
		a.versions = newVersions()
	}
	return a
}

// InternClass is a group of fields interned together; wire's doc.go has
// the measured effect of each.
type InternClass uint

const (
	// InternMeta: namespace, generateName, label keys and values,
	// annotation keys, owner references (apiVersion, kind, name, uid),
	// finalizers.
	InternMeta InternClass = 1 << iota
	// InternAnnotationValues: annotation values.
	InternAnnotationValues
	// InternSpec: pod-level spec strings (node, service account,
	// scheduler, priority class, policies, node selector, tolerations,
	// image pull secrets, volumes and their sources, affinity selectors).
	InternSpec
	// InternContainers: container names, images, pull policies, commands
	// and args, ports, env names and references, envFrom, volume mounts,
	// probes, termination message settings, capabilities.
	InternContainers
	// InternEnvValues: literal env values.
	InternEnvValues
	// InternStatus: phase, conditions, host IPs, QoS class, container
	// statuses (name, image, imageID, state reasons), nominated node.
	InternStatus

	InternAll = InternMeta | InternAnnotationValues | InternSpec | InternContainers | InternEnvValues | InternStatus
	// InternDefault leaves out env values, which did not pay off on
	// apisim's pods (wire's doc.go).
	InternDefault = InternAll &^ InternEnvValues
)

// InternClasses are the field classes one by one, as the benchmarks
// measure them (annotation values with the metadata they belong to).
var InternClasses = []struct {
	Name  string
	Class InternClass
}{
	{"meta", InternMeta},
	{"annotation-values", InternAnnotationValues | InternMeta},
	{"spec", InternSpec},
	{"containers", InternContainers},
	{"env-values", InternEnvValues},
	{"status", InternStatus},
}

// On reports whether the diet changes objects after they are decoded.
func (c Config) On() bool {
	return c.DropManagedFields || c.Intern || c.Compact || c.Share || c.ShareMaps
}

// Sharing reports whether pods share parts: protobuf pods are then
// decoded by ProtoPod.
func (c Config) Sharing() bool { return c.Share || c.ShareMaps }

// String lists the steps that are on, as configured (compaction and
// sharing change pods only): ", diet (managedFields dropped, interned,
// compacted, shared)"; "" when none is.
func (c Config) String() string {
	var steps []string
	for _, s := range []struct {
		on   bool
		name string
	}{{c.DropManagedFields, "managedFields dropped"}, {c.Intern, "interned"}, {c.Compact, "compacted"}, {c.Share && !c.ShareMaps, "shared"}, {c.ShareMaps, "shared with maps"}} {
		if s.on {
			steps = append(steps, s.name)
		}
	}
	if len(steps) == 0 {
		return ""
	}
	return ", diet (" + strings.Join(steps, ", ") + ")"
}

// Apply compacts, interns and shares obj, decoded by any path, as the
// Config asks, and returns it; ProtoPod does this for protobuf pods with
// sharing on. Maps are shared between objects only with ShareMaps.
// Called by the decoder goroutines.
func (a *Applier) Apply(obj runtime.Object) runtime.Object {
	if pod, ok := obj.(*corev1.Pod); ok {
		if !a.Intern && !a.Sharing() {
			a.dietPod(nil, pod, false)
			return obj
		}
		t := a.interners.get()
		a.dietPod(t, pod, false)
		// Sharing comes last: a value is offered to other pods only once
		// this pod is done changing it.
		if a.Sharing() {
			sharePod(t, pod, a.ShareMaps)
		}
		a.interners.put(t)
		return obj
	}
	if !a.Intern {
		return obj
	}
	t := a.interners.get()
	defer a.interners.put(t)
	switch o := obj.(type) {
	case *unstructured.Unstructured:
		internUnstructured(t, o.Object, 0)
	case *metav1.Status:
	default:
		internReflect(t, reflect.ValueOf(obj))
	}
	return obj
}

// dietPod compacts and interns a pod as asked to (t may be nil without
// interning); mapsDone: its label and annotation maps were interned as
// they were decoded (metaStrings).
func (a *Applier) dietPod(t *interner, pod *corev1.Pod, mapsDone bool) {
	if a.Compact {
		compactPod(pod)
	}
	if a.Intern {
		internPod(t, pod, a.Classes, mapsDone)
	}
}

// metaStrings is how unmarshalPod makes the label and annotation strings
// of a pod that t interns: interned while decoded if the diet interns them.
func (a *Applier) metaStrings(t *interner) metaStrings {
	if !a.Intern || a.Classes&InternMeta == 0 {
		return metaStrings{}
	}
	return metaStrings{t: t, annotationValues: a.Classes&InternAnnotationValues != 0}
}

// ProtoPod decodes a pod's protobuf message b (the codec has cut its
// managedFields if asked to) with the whole diet: parts shared before they
// are decoded (shareproto.go) and with the pod's previous version
// (versions.go), the rest unmarshalled into exact-size slices (presize.go),
// compacted and interned. For Sharing only; its result or error equals
// the generated unmarshaler's. Called by the decoder goroutines.
func (a *Applier) ProtoPod(b []byte) (runtime.Object, error) {
	t := a.interners.get()
	defer a.interners.put(t)
	whole := b
	if a.versions != nil {
		b = t.reuse.plan(a.versions, b)
	}
	pl := &t.plan
	in, planned := pl.plan(t, b, a.ShareMaps)
	pod := &corev1.Pod{}
	ms := a.metaStrings(t)
	if err := unmarshalPod(pod, in, ms); err != nil {
		pl.reset()
		// A hit's bytes decoded before, so the error is in the rest (or
		// the shape is one unmarshalPod leaves to the plain decode); the
		// plain decode reports it as client-go would.
		pod = &corev1.Pod{}
		if err := pod.Unmarshal(whole); err != nil {
			t.reuse.reset()
			return nil, err
		}
		planned, ms = false, metaStrings{}
		t.reuse.decodedAll()
	}
	a.dietPod(t, pod, ms.t != nil)
	if planned {
		pl.finish(t, pod, b)
	} else {
		sharePod(t, pod, a.ShareMaps)
	}
	if a.versions != nil {
		t.reuse.finish(a.versions, pod, a.ShareMaps)
	}
	return pod, nil
}

// in replaces *s by the interner's canonical copy of its value.
func in[S ~string](t *interner, s *S) {
	if len(*s) > 0 {
		*s = S(t.canonical(string(*s)))
	}
}

func inPtr[S ~string](t *interner, s *S) {
	if s != nil {
		in(t, s)
	}
}

func inSlice[S ~string](t *interner, s []S) {
	for i := range s {
		in(t, &s[i])
	}
}

// inMap interns a map's keys (values too with values). Storing an equal key
// replaces the key the map holds, so no entry is added; an entry whose key
// and value are already the canonical copies is not stored again.
func inMap[K ~string](t *interner, m map[K]string, values bool) {
	for k, v := range m {
		ik, iv := k, v
		in(t, &ik)
		if values {
			in(t, &iv)
		}
		if unsafe.StringData(string(ik)) != unsafe.StringData(string(k)) || unsafe.StringData(iv) != unsafe.StringData(v) {
			m[ik] = iv
		}
	}
}

func internPod(t *interner, p *corev1.Pod, c InternClass, mapsDone bool) {
	if c&(InternMeta|InternAnnotationValues) != 0 {
		internObjectMeta(t, &p.ObjectMeta, c, mapsDone)
	}
	s := &p.Spec
	if c&InternSpec != 0 {
		in(t, &s.NodeName)
		in(t, &s.ServiceAccountName)
		in(t, &s.DeprecatedServiceAccount)
		in(t, &s.SchedulerName)
		in(t, &s.PriorityClassName)
		in(t, &s.RestartPolicy)
		in(t, &s.DNSPolicy)
		in(t, &s.Subdomain)
		inPtr(t, s.RuntimeClassName)
		inPtr(t, s.PreemptionPolicy)
		inMap(t, s.NodeSelector, true)
		for i := range s.Tolerations {
			tol := &s.Tolerations[i]
			in(t, &tol.Key)
			in(t, &tol.Operator)
			in(t, &tol.Value)
			in(t, &tol.Effect)
		}
		for i := range s.ImagePullSecrets {
			in(t, &s.ImagePullSecrets[i].Name)
		}
		for i := range s.Volumes {
			internVolume(t, &s.Volumes[i])
		}
		if s.SecurityContext != nil && s.SecurityContext.SeccompProfile != nil {
			in(t, &s.SecurityContext.SeccompProfile.Type)
		}
		if a := s.Affinity; a != nil {
			if a.PodAntiAffinity != nil {
				internWeightedTerms(t, a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution)
				internTerms(t, a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution)
			}
			if a.PodAffinity != nil {
				internWeightedTerms(t, a.PodAffinity.PreferredDuringSchedulingIgnoredDuringExecution)
				internTerms(t, a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution)
			}
			if a.NodeAffinity != nil {
				if r := a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution; r != nil {
					for i := range r.NodeSelectorTerms {
						internNodeSelectorTerm(t, &r.NodeSelectorTerms[i])
					}
				}
				for i := range a.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution {
					internNodeSelectorTerm(t, &a.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution[i].Preference)
				}
			}
		}
		for i := range s.TopologySpreadConstraints {
			tsc := &s.TopologySpreadConstraints[i]
			in(t, &tsc.TopologyKey)
			in(t, &tsc.WhenUnsatisfiable)
			internLabelSelector(t, tsc.LabelSelector)
		}
	}
	if c&(InternContainers|InternEnvValues) != 0 {
		for i := range s.InitContainers {
			internContainer(t, &s.InitContainers[i], c)
		}
		for i := range s.Containers {
			internContainer(t, &s.Containers[i], c)
		}
	}
	if c&InternStatus != 0 {
		st := &p.Status
		in(t, &st.Phase)
		in(t, &st.QOSClass)
		in(t, &st.HostIP)
		in(t, &st.NominatedNodeName)
		in(t, &st.Reason)
		for i := range st.HostIPs {
			in(t, &st.HostIPs[i].IP)
		}
		for i := range st.Conditions {
			cd := &st.Conditions[i]
			in(t, &cd.Type)
			in(t, &cd.Status)
			in(t, &cd.Reason)
			in(t, &cd.Message)
		}
		for _, css := range [][]corev1.ContainerStatus{st.InitContainerStatuses, st.ContainerStatuses, st.EphemeralContainerStatuses} {
			for i := range css {
				cs := &css[i]
				in(t, &cs.Name)
				in(t, &cs.Image)
				in(t, &cs.ImageID)
				internState(t, &cs.State)
				internState(t, &cs.LastTerminationState)
				for j := range cs.VolumeMounts {
					in(t, &cs.VolumeMounts[j].Name)
					in(t, &cs.VolumeMounts[j].MountPath)
				}
			}
		}
	}
}

// internObjectMeta interns m's strings of the classes c; its label and
// annotation maps only if not mapsDone.
func internObjectMeta(t *interner, m *metav1.ObjectMeta, c InternClass, mapsDone bool) {
	if c&InternMeta != 0 {
		in(t, &m.Namespace)
		in(t, &m.GenerateName)
		inSlice(t, m.Finalizers)
		for i := range m.OwnerReferences {
			o := &m.OwnerReferences[i]
			in(t, &o.APIVersion)
			in(t, &o.Kind)
			in(t, &o.Name)
			in(t, &o.UID)
		}
	}
	switch {
	case mapsDone:
	case c&(InternMeta|InternAnnotationValues) == InternMeta|InternAnnotationValues:
		inMap(t, m.Labels, true)
		inMap(t, m.Annotations, true)
	case c&InternMeta != 0:
		inMap(t, m.Labels, true)
		inMap(t, m.Annotations, false)
	}
}

func internState(t *interner, s *corev1.ContainerState) {
	if s.Waiting != nil {
		in(t, &s.Waiting.Reason)
		in(t, &s.Waiting.Message)
	}
	if s.Terminated != nil {
		in(t, &s.Terminated.Reason)
		in(t, &s.Terminated.Message)
	}
}

func internVolume(t *interner, v *corev1.Volume) {
	in(t, &v.Name)
	vs := &v.VolumeSource
	if vs.ConfigMap != nil {
		in(t, &vs.ConfigMap.Name)
		internKeyToPaths(t, vs.ConfigMap.Items)
	}
	if vs.Secret != nil {
		in(t, &vs.Secret.SecretName)
		internKeyToPaths(t, vs.Secret.Items)
	}
	if vs.HostPath != nil {
		in(t, &vs.HostPath.Path)
	}
	if vs.PersistentVolumeClaim != nil {
		in(t, &vs.PersistentVolumeClaim.ClaimName)
	}
	if vs.Projected != nil {
		for i := range vs.Projected.Sources {
			src := &vs.Projected.Sources[i]
			if src.ServiceAccountToken != nil {
				in(t, &src.ServiceAccountToken.Path)
				in(t, &src.ServiceAccountToken.Audience)
			}
			if src.ConfigMap != nil {
				in(t, &src.ConfigMap.Name)
				internKeyToPaths(t, src.ConfigMap.Items)
			}
			if src.Secret != nil {
				in(t, &src.Secret.Name)
				internKeyToPaths(t, src.Secret.Items)
			}
			if src.DownwardAPI != nil {
				for j := range src.DownwardAPI.Items {
					it := &src.DownwardAPI.Items[j]
					in(t, &it.Path)
					if it.FieldRef != nil {
						in(t, &it.FieldRef.APIVersion)
						in(t, &it.FieldRef.FieldPath)
					}
				}
			}
		}
	}
}

func internKeyToPaths(t *interner, items []corev1.KeyToPath) {
	for i := range items {
		in(t, &items[i].Key)
		in(t, &items[i].Path)
	}
}

func internLabelSelector(t *interner, s *metav1.LabelSelector) {
	if s == nil {
		return
	}
	inMap(t, s.MatchLabels, true)
	for i := range s.MatchExpressions {
		e := &s.MatchExpressions[i]
		in(t, &e.Key)
		in(t, &e.Operator)
		inSlice(t, e.Values)
	}
}

func internTerms(t *interner, ts []corev1.PodAffinityTerm) {
	for i := range ts {
		internLabelSelector(t, ts[i].LabelSelector)
		in(t, &ts[i].TopologyKey)
		inSlice(t, ts[i].Namespaces)
	}
}

func internWeightedTerms(t *interner, ts []corev1.WeightedPodAffinityTerm) {
	for i := range ts {
		term := &ts[i].PodAffinityTerm
		internLabelSelector(t, term.LabelSelector)
		in(t, &term.TopologyKey)
		inSlice(t, term.Namespaces)
	}
}

func internNodeSelectorTerm(t *interner, term *corev1.NodeSelectorTerm) {
	for _, reqs := range [][]corev1.NodeSelectorRequirement{term.MatchExpressions, term.MatchFields} {
		for i := range reqs {
			in(t, &reqs[i].Key)
			in(t, &reqs[i].Operator)
			inSlice(t, reqs[i].Values)
		}
	}
}

func internContainer(t *interner, ct *corev1.Container, c InternClass) {
	if c&InternContainers != 0 {
		in(t, &ct.Name)
		in(t, &ct.Image)
		in(t, &ct.ImagePullPolicy)
		in(t, &ct.WorkingDir)
		in(t, &ct.TerminationMessagePath)
		in(t, &ct.TerminationMessagePolicy)
		inSlice(t, ct.Command)
		inSlice(t, ct.Args)
		for i := range ct.Ports {
			in(t, &ct.Ports[i].Name)
			in(t, &ct.Ports[i].Protocol)
		}
		for i := range ct.EnvFrom {
			e := &ct.EnvFrom[i]
			in(t, &e.Prefix)
			if e.ConfigMapRef != nil {
				in(t, &e.ConfigMapRef.Name)
			}
			if e.SecretRef != nil {
				in(t, &e.SecretRef.Name)
			}
		}
		for i := range ct.VolumeMounts {
			m := &ct.VolumeMounts[i]
			in(t, &m.Name)
			in(t, &m.MountPath)
			in(t, &m.SubPath)
		}
		for _, p := range []*corev1.Probe{ct.LivenessProbe, ct.ReadinessProbe, ct.StartupProbe} {
			if p != nil && p.HTTPGet != nil {
				in(t, &p.HTTPGet.Path)
				in(t, &p.HTTPGet.Scheme)
				in(t, &p.HTTPGet.Port.StrVal)
			}
		}
		if sc := ct.SecurityContext; sc != nil && sc.Capabilities != nil {
			inSlice(t, sc.Capabilities.Drop)
			inSlice(t, sc.Capabilities.Add)
		}
	}
	for i := range ct.Env {
		e := &ct.Env[i]
		if c&InternContainers != 0 {
			in(t, &e.Name)
			if vf := e.ValueFrom; vf != nil {
				if vf.FieldRef != nil {
					in(t, &vf.FieldRef.APIVersion)
					in(t, &vf.FieldRef.FieldPath)
				}
				if vf.SecretKeyRef != nil {
					in(t, &vf.SecretKeyRef.Name)
					in(t, &vf.SecretKeyRef.Key)
				}
				if vf.ConfigMapKeyRef != nil {
					in(t, &vf.ConfigMapKeyRef.Name)
					in(t, &vf.ConfigMapKeyRef.Key)
				}
			}
		}
		if c&InternEnvValues != 0 {
			in(t, &e.Value)
		}
	}
}

// maxInternLen bounds the strings the generic walks intern: long strings
// are rarely repeated and would only grow the intern table.
const maxInternLen = 256

// internReflect interns every string of a typed object up to maxInternLen
// bytes, except the fields of ObjectMeta that are unique per object.
func internReflect(t *interner, v reflect.Value) {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			internReflect(t, v.Elem())
		}
	case reflect.Struct:
		if v.Type() == objectMetaType {
			if v.CanAddr() {
				internObjectMeta(t, v.Addr().Interface().(*metav1.ObjectMeta), InternMeta, false)
			}
			return
		}
		for i := range v.NumField() {
			if f := v.Field(i); f.CanSet() {
				internReflect(t, f)
			}
		}
	case reflect.Slice:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			return
		}
		for i := range v.Len() {
			internReflect(t, v.Index(i))
		}
	case reflect.Array:
		for i := range v.Len() {
			internReflect(t, v.Index(i))
		}
	case reflect.Map:
		if v.Type().Key().Kind() == reflect.String && v.Type().Elem().Kind() == reflect.String {
			it := v.MapRange()
			for it.Next() {
				k, e := it.Key().String(), it.Value().String()
				if len(k) <= maxInternLen {
					k = t.canonical(k)
				}
				if len(e) <= maxInternLen {
					e = t.canonical(e)
				}
				v.SetMapIndex(reflect.ValueOf(k).Convert(v.Type().Key()), reflect.ValueOf(e).Convert(v.Type().Elem()))
			}
			return
		}
		if v.Type().Elem().Kind() == reflect.Struct || v.Type().Elem().Kind() == reflect.Pointer {
			// Map values are not addressable: intern pointed-to structs only.
			if v.Type().Elem().Kind() == reflect.Pointer {
				it := v.MapRange()
				for it.Next() {
					internReflect(t, it.Value())
				}
			}
		}
	case reflect.String:
		if s := v.String(); len(s) > 0 && len(s) <= maxInternLen && v.CanSet() {
			v.SetString(t.canonical(s))
		}
	}
}

var objectMetaType = reflect.TypeFor[metav1.ObjectMeta]()

// internUnstructured interns the keys of every map and string values up to
// maxInternLen, except metadata's name, uid and resourceVersion.
func internUnstructured(t *interner, m map[string]any, depth int) {
	for k, v := range m {
		ik := k
		if len(ik) <= maxInternLen {
			ik = t.canonical(ik)
		}
		m[ik] = internAny(t, v, depth+1, depth == 0 && k == "metadata")
	}
}

func internAny(t *interner, v any, depth int, metadata bool) any {
	switch x := v.(type) {
	case string:
		if len(x) > 0 && len(x) <= maxInternLen {
			return t.canonical(x)
		}
	case map[string]any:
		if metadata {
			for k, e := range x {
				ik := t.canonical(k)
				switch k {
				case "name", "uid", "resourceVersion", "creationTimestamp", "managedFields":
					x[ik] = e
				default:
					x[ik] = internAny(t, e, depth+1, false)
				}
			}
			return x
		}
		internUnstructured(t, x, depth)
	case []any:
		for i := range x {
			x[i] = internAny(t, x[i], depth+1, false)
		}
	}
	return v
}

// fit returns s in an array of exactly its length: a decoder appends
// repeated fields one by one, so up to half of a slice's capacity is slack.
func fit[T any](s []T) []T {
	if cap(s) == len(s) {
		return s
	}
	out := make([]T, len(s))
	copy(out, s)
	return out
}

// compactPod fits the slices of a pod that a decoder grows by appending.
func compactPod(p *corev1.Pod) {
	m := &p.ObjectMeta
	m.OwnerReferences = fit(m.OwnerReferences)
	m.Finalizers = fit(m.Finalizers)
	m.ManagedFields = fit(m.ManagedFields)
	s := &p.Spec
	s.Volumes = fit(s.Volumes)
	for i := range s.Volumes {
		if pr := s.Volumes[i].Projected; pr != nil {
			pr.Sources = fit(pr.Sources)
		}
	}
	s.Tolerations = fit(s.Tolerations)
	s.ImagePullSecrets = fit(s.ImagePullSecrets)
	s.TopologySpreadConstraints = fit(s.TopologySpreadConstraints)
	s.InitContainers = fit(s.InitContainers)
	s.Containers = fit(s.Containers)
	for _, cs := range [][]corev1.Container{s.InitContainers, s.Containers} {
		for i := range cs {
			c := &cs[i]
			c.Command = fit(c.Command)
			c.Args = fit(c.Args)
			c.Ports = fit(c.Ports)
			c.EnvFrom = fit(c.EnvFrom)
			c.Env = fit(c.Env)
			c.VolumeMounts = fit(c.VolumeMounts)
		}
	}
	st := &p.Status
	st.Conditions = fit(st.Conditions)
	st.HostIPs = fit(st.HostIPs)
	st.PodIPs = fit(st.PodIPs)
	st.InitContainerStatuses = fit(st.InitContainerStatuses)
	st.ContainerStatuses = fit(st.ContainerStatuses)
	for _, css := range [][]corev1.ContainerStatus{st.InitContainerStatuses, st.ContainerStatuses} {
		for i := range css {
			css[i].VolumeMounts = fit(css[i].VolumeMounts)
		}
	}
}
