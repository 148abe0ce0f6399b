package wire

import (
	"hash/maphash"
	"reflect"
	"sync/atomic"
	"unique"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// diet is the memory diet applied while decoding.
type diet struct {
	dropManagedFields bool
	intern            bool
	compact           bool
	share             bool
	// classes selects the field classes interned (internDefault unless a
	// test measures them one by one).
	classes internClass
}

// internClass is a group of fields interned together; doc.go has the
// measured effect of each.
type internClass uint

const (
	// internMeta: namespace, generateName, label keys and values,
	// annotation keys, owner references (apiVersion, kind, name, uid),
	// finalizers.
	internMeta internClass = 1 << iota
	// internAnnotationValues: annotation values.
	internAnnotationValues
	// internSpec: pod-level spec strings (node, service account,
	// scheduler, priority class, policies, node selector, tolerations,
	// image pull secrets, volumes and their sources, affinity selectors).
	internSpec
	// internContainers: container names, images, pull policies, commands
	// and args, ports, env names and references, envFrom, volume mounts,
	// probes, termination message settings, capabilities.
	internContainers
	// internEnvValues: literal env values.
	internEnvValues
	// internStatus: phase, conditions, host IPs, QoS class, container
	// statuses (name, image, imageID, state reasons), nominated node.
	internStatus

	internAll = internMeta | internAnnotationValues | internSpec | internContainers | internEnvValues | internStatus
	// internDefault leaves out env values, which did not pay off on apisim's
	// pods (doc.go).
	internDefault = internAll &^ internEnvValues
)

// apply interns the object's strings and compacts its slices if asked to
// and returns the object. Only strings are shared between objects, never
// maps or slices.
func (d diet) apply(obj runtime.Object) runtime.Object {
	if pod, ok := obj.(*corev1.Pod); ok {
		// Sharing comes last: a value is cached for other pods only once
		// this pod is done changing it.
		if d.compact {
			compactPod(pod)
		}
		if d.intern {
			internPod(pod, d.classes)
		}
		if d.share {
			sharePod(pod)
		}
		return obj
	}
	if !d.intern {
		return obj
	}
	switch o := obj.(type) {
	case *unstructured.Unstructured:
		internUnstructured(o.Object, 0)
	case *metav1.Status:
	default:
		internReflect(reflect.ValueOf(obj))
	}
	return obj
}

// in replaces *s by the canonical copy of its value.
func in[S ~string](s *S) {
	if len(*s) > 0 {
		*s = S(canonical(string(*s)))
	}
}

// canonical returns the canonical copy of s: from a direct-mapped front
// cache when it was seen lately, else from the unique package (whose
// lookups, and weak handles for new strings, cost several times a hash and
// a compare). A slot whose string was used since it was cached gets a
// second chance instead of being replaced by a miss, so that strings seen
// once (a pod's uid-like values) do not push out the ones every pod
// repeats. The cache holds at most cacheSlots strings strongly.
func canonical(s string) string {
	slot := &frontCache[maphash.String(cacheSeed, s)&(cacheSlots-1)]
	e := slot.Load()
	if e != nil && e.s == s {
		if !e.used.Load() {
			e.used.Store(true)
		}
		return e.s
	}
	c := unique.Make(s).Value()
	if e != nil && e.used.Load() {
		e.used.Store(false)
		return c
	}
	slot.Store(&cached{s: c})
	return c
}

// cached is a front cache entry.
type cached struct {
	s    string
	used atomic.Bool // looked up since cached or since its second chance
}

const cacheSlots = 1 << 14

var (
	cacheSeed  = maphash.MakeSeed()
	frontCache [cacheSlots]atomic.Pointer[cached]
)

// resetFrontCache empties the front cache and the cache of shared values
// (for measurements).
func resetFrontCache() {
	for i := range frontCache {
		frontCache[i].Store(nil)
	}
	for i := range sharedCache {
		sharedCache[i].Store(nil)
	}
}

func inPtr[S ~string](s *S) {
	if s != nil {
		in(s)
	}
}

func inSlice[S ~string](s []S) {
	for i := range s {
		in(&s[i])
	}
}

// inMap interns a map's keys (values too with values). Storing an equal key
// replaces the key the map holds, so no entry is added.
func inMap[K ~string](m map[K]string, values bool) {
	for k, v := range m {
		ik := k
		in(&ik)
		if values {
			in(&v)
		}
		m[ik] = v
	}
}

func internPod(p *corev1.Pod, c internClass) {
	if c&(internMeta|internAnnotationValues) != 0 {
		internObjectMeta(&p.ObjectMeta, c)
	}
	s := &p.Spec
	if c&internSpec != 0 {
		in(&s.NodeName)
		in(&s.ServiceAccountName)
		in(&s.DeprecatedServiceAccount)
		in(&s.SchedulerName)
		in(&s.PriorityClassName)
		in(&s.RestartPolicy)
		in(&s.DNSPolicy)
		in(&s.Subdomain)
		inPtr(s.RuntimeClassName)
		inPtr(s.PreemptionPolicy)
		inMap(s.NodeSelector, true)
		for i := range s.Tolerations {
			t := &s.Tolerations[i]
			in(&t.Key)
			in(&t.Operator)
			in(&t.Value)
			in(&t.Effect)
		}
		for i := range s.ImagePullSecrets {
			in(&s.ImagePullSecrets[i].Name)
		}
		for i := range s.Volumes {
			internVolume(&s.Volumes[i])
		}
		if s.SecurityContext != nil && s.SecurityContext.SeccompProfile != nil {
			in(&s.SecurityContext.SeccompProfile.Type)
		}
		if a := s.Affinity; a != nil {
			if a.PodAntiAffinity != nil {
				internWeightedTerms(a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution)
				internTerms(a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution)
			}
			if a.PodAffinity != nil {
				internWeightedTerms(a.PodAffinity.PreferredDuringSchedulingIgnoredDuringExecution)
				internTerms(a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution)
			}
			if a.NodeAffinity != nil {
				if r := a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution; r != nil {
					for i := range r.NodeSelectorTerms {
						internNodeSelectorTerm(&r.NodeSelectorTerms[i])
					}
				}
				for i := range a.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution {
					internNodeSelectorTerm(&a.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution[i].Preference)
				}
			}
		}
		for i := range s.TopologySpreadConstraints {
			t := &s.TopologySpreadConstraints[i]
			in(&t.TopologyKey)
			in(&t.WhenUnsatisfiable)
			internLabelSelector(t.LabelSelector)
		}
	}
	if c&(internContainers|internEnvValues) != 0 {
		for i := range s.InitContainers {
			internContainer(&s.InitContainers[i], c)
		}
		for i := range s.Containers {
			internContainer(&s.Containers[i], c)
		}
	}
	if c&internStatus != 0 {
		st := &p.Status
		in(&st.Phase)
		in(&st.QOSClass)
		in(&st.HostIP)
		in(&st.NominatedNodeName)
		in(&st.Reason)
		for i := range st.HostIPs {
			in(&st.HostIPs[i].IP)
		}
		for i := range st.Conditions {
			cd := &st.Conditions[i]
			in(&cd.Type)
			in(&cd.Status)
			in(&cd.Reason)
			in(&cd.Message)
		}
		for _, css := range [][]corev1.ContainerStatus{st.InitContainerStatuses, st.ContainerStatuses, st.EphemeralContainerStatuses} {
			for i := range css {
				cs := &css[i]
				in(&cs.Name)
				in(&cs.Image)
				in(&cs.ImageID)
				internState(&cs.State)
				internState(&cs.LastTerminationState)
				for j := range cs.VolumeMounts {
					in(&cs.VolumeMounts[j].Name)
					in(&cs.VolumeMounts[j].MountPath)
				}
			}
		}
	}
}

func internObjectMeta(m *metav1.ObjectMeta, c internClass) {
	if c&internMeta != 0 {
		in(&m.Namespace)
		in(&m.GenerateName)
		inMap(m.Labels, true)
		inSlice(m.Finalizers)
		for i := range m.OwnerReferences {
			o := &m.OwnerReferences[i]
			in(&o.APIVersion)
			in(&o.Kind)
			in(&o.Name)
			in(&o.UID)
		}
	}
	if c&(internMeta|internAnnotationValues) == internMeta|internAnnotationValues {
		inMap(m.Annotations, true)
	} else if c&internMeta != 0 {
		inMap(m.Annotations, false)
	}
}

func internState(s *corev1.ContainerState) {
	if s.Waiting != nil {
		in(&s.Waiting.Reason)
		in(&s.Waiting.Message)
	}
	if s.Terminated != nil {
		in(&s.Terminated.Reason)
		in(&s.Terminated.Message)
	}
}

func internVolume(v *corev1.Volume) {
	in(&v.Name)
	vs := &v.VolumeSource
	if vs.ConfigMap != nil {
		in(&vs.ConfigMap.Name)
		internKeyToPaths(vs.ConfigMap.Items)
	}
	if vs.Secret != nil {
		in(&vs.Secret.SecretName)
		internKeyToPaths(vs.Secret.Items)
	}
	if vs.HostPath != nil {
		in(&vs.HostPath.Path)
	}
	if vs.PersistentVolumeClaim != nil {
		in(&vs.PersistentVolumeClaim.ClaimName)
	}
	if vs.Projected != nil {
		for i := range vs.Projected.Sources {
			src := &vs.Projected.Sources[i]
			if src.ServiceAccountToken != nil {
				in(&src.ServiceAccountToken.Path)
				in(&src.ServiceAccountToken.Audience)
			}
			if src.ConfigMap != nil {
				in(&src.ConfigMap.Name)
				internKeyToPaths(src.ConfigMap.Items)
			}
			if src.Secret != nil {
				in(&src.Secret.Name)
				internKeyToPaths(src.Secret.Items)
			}
			if src.DownwardAPI != nil {
				for j := range src.DownwardAPI.Items {
					it := &src.DownwardAPI.Items[j]
					in(&it.Path)
					if it.FieldRef != nil {
						in(&it.FieldRef.APIVersion)
						in(&it.FieldRef.FieldPath)
					}
				}
			}
		}
	}
}

func internKeyToPaths(items []corev1.KeyToPath) {
	for i := range items {
		in(&items[i].Key)
		in(&items[i].Path)
	}
}

func internLabelSelector(s *metav1.LabelSelector) {
	if s == nil {
		return
	}
	inMap(s.MatchLabels, true)
	for i := range s.MatchExpressions {
		e := &s.MatchExpressions[i]
		in(&e.Key)
		in(&e.Operator)
		inSlice(e.Values)
	}
}

func internTerms(ts []corev1.PodAffinityTerm) {
	for i := range ts {
		internLabelSelector(ts[i].LabelSelector)
		in(&ts[i].TopologyKey)
		inSlice(ts[i].Namespaces)
	}
}

func internWeightedTerms(ts []corev1.WeightedPodAffinityTerm) {
	for i := range ts {
		t := &ts[i].PodAffinityTerm
		internLabelSelector(t.LabelSelector)
		in(&t.TopologyKey)
		inSlice(t.Namespaces)
	}
}

func internNodeSelectorTerm(t *corev1.NodeSelectorTerm) {
	for _, reqs := range [][]corev1.NodeSelectorRequirement{t.MatchExpressions, t.MatchFields} {
		for i := range reqs {
			in(&reqs[i].Key)
			in(&reqs[i].Operator)
			inSlice(reqs[i].Values)
		}
	}
}

func internContainer(ct *corev1.Container, c internClass) {
	if c&internContainers != 0 {
		in(&ct.Name)
		in(&ct.Image)
		in(&ct.ImagePullPolicy)
		in(&ct.WorkingDir)
		in(&ct.TerminationMessagePath)
		in(&ct.TerminationMessagePolicy)
		inSlice(ct.Command)
		inSlice(ct.Args)
		for i := range ct.Ports {
			in(&ct.Ports[i].Name)
			in(&ct.Ports[i].Protocol)
		}
		for i := range ct.EnvFrom {
			e := &ct.EnvFrom[i]
			in(&e.Prefix)
			if e.ConfigMapRef != nil {
				in(&e.ConfigMapRef.Name)
			}
			if e.SecretRef != nil {
				in(&e.SecretRef.Name)
			}
		}
		for i := range ct.VolumeMounts {
			m := &ct.VolumeMounts[i]
			in(&m.Name)
			in(&m.MountPath)
			in(&m.SubPath)
		}
		for _, p := range []*corev1.Probe{ct.LivenessProbe, ct.ReadinessProbe, ct.StartupProbe} {
			if p != nil && p.HTTPGet != nil {
				in(&p.HTTPGet.Path)
				in(&p.HTTPGet.Scheme)
				in(&p.HTTPGet.Port.StrVal)
			}
		}
		if sc := ct.SecurityContext; sc != nil && sc.Capabilities != nil {
			inSlice(sc.Capabilities.Drop)
			inSlice(sc.Capabilities.Add)
		}
	}
	for i := range ct.Env {
		e := &ct.Env[i]
		if c&internContainers != 0 {
			in(&e.Name)
			if vf := e.ValueFrom; vf != nil {
				if vf.FieldRef != nil {
					in(&vf.FieldRef.APIVersion)
					in(&vf.FieldRef.FieldPath)
				}
				if vf.SecretKeyRef != nil {
					in(&vf.SecretKeyRef.Name)
					in(&vf.SecretKeyRef.Key)
				}
				if vf.ConfigMapKeyRef != nil {
					in(&vf.ConfigMapKeyRef.Name)
					in(&vf.ConfigMapKeyRef.Key)
				}
			}
		}
		if c&internEnvValues != 0 {
			in(&e.Value)
		}
	}
}

// maxInternLen bounds the strings the generic walks intern: long strings
// are rarely repeated and would only grow the intern table.
const maxInternLen = 256

// internReflect interns every string of a typed object up to maxInternLen
// bytes, except the fields of ObjectMeta that are unique per object.
func internReflect(v reflect.Value) {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			internReflect(v.Elem())
		}
	case reflect.Struct:
		if v.Type() == objectMetaType {
			if v.CanAddr() {
				internObjectMeta(v.Addr().Interface().(*metav1.ObjectMeta), internMeta)
			}
			return
		}
		for i := range v.NumField() {
			if f := v.Field(i); f.CanSet() {
				internReflect(f)
			}
		}
	case reflect.Slice:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			return
		}
		for i := range v.Len() {
			internReflect(v.Index(i))
		}
	case reflect.Array:
		for i := range v.Len() {
			internReflect(v.Index(i))
		}
	case reflect.Map:
		if v.Type().Key().Kind() == reflect.String && v.Type().Elem().Kind() == reflect.String {
			it := v.MapRange()
			for it.Next() {
				k, e := it.Key().String(), it.Value().String()
				if len(k) <= maxInternLen {
					k = canonical(k)
				}
				if len(e) <= maxInternLen {
					e = canonical(e)
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
					internReflect(it.Value())
				}
			}
		}
	case reflect.String:
		if s := v.String(); len(s) > 0 && len(s) <= maxInternLen && v.CanSet() {
			v.SetString(canonical(s))
		}
	}
}

var objectMetaType = reflect.TypeFor[metav1.ObjectMeta]()

// internUnstructured interns the keys of every map and string values up to
// maxInternLen, except metadata's name, uid and resourceVersion.
func internUnstructured(m map[string]any, depth int) {
	for k, v := range m {
		ik := k
		if len(ik) <= maxInternLen {
			ik = canonical(ik)
		}
		m[ik] = internAny(v, depth+1, depth == 0 && k == "metadata")
	}
}

func internAny(v any, depth int, metadata bool) any {
	switch x := v.(type) {
	case string:
		if len(x) > 0 && len(x) <= maxInternLen {
			return canonical(x)
		}
	case map[string]any:
		if metadata {
			for k, e := range x {
				ik := canonical(k)
				switch k {
				case "name", "uid", "resourceVersion", "creationTimestamp", "managedFields":
					x[ik] = e
				default:
					x[ik] = internAny(e, depth+1, false)
				}
			}
			return x
		}
		internUnstructured(x, depth)
	case []any:
		for i := range x {
			x[i] = internAny(x[i], depth+1, false)
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
