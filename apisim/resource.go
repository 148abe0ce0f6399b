package apisim

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Object is an API object the server stores: a typed Kubernetes object
// (*corev1.Pod, *corev1.ConfigMap, *appsv1.Deployment) or, for a custom
// resource, an *unstructured.Unstructured.
type Object interface {
	runtime.Object
	metav1.Object
}

// The resources a Server serves, all namespaced.
var (
	PodsResource        = schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	ConfigMapsResource  = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	DeploymentsResource = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	// WidgetsResource is a custom resource, served as the API server serves
	// custom resources: unstructured JSON (protobuf only for
	// PartialObjectMetadata), kind WidgetKind.
	WidgetsResource = schema.GroupVersionResource{Group: "example.shardinformer.io", Version: "v1", Resource: "widgets"}
	WidgetKind      = WidgetsResource.GroupVersion().WithKind("Widget")
	// LeasesResource is coordination.k8s.io/v1 leases, the one resource
	// that may also be written over HTTP (see Server).
	LeasesResource = schema.GroupVersionResource{Group: "coordination.k8s.io", Version: "v1", Resource: "leases"}
)

// resource describes one served resource. Immutable once built; shared by
// every object of the resource.
type apiResource struct {
	gvr        schema.GroupVersionResource
	kind       string
	singular   string
	shortNames []string
	categories []string
	// custom marks a custom resource: stored as unstructured JSON, and
	// protobuf is served only for PartialObjectMetadata (the API server's
	// StandardSerializers for custom resources exclude protobuf).
	custom bool
	// writable resources also serve create (POST), update (PUT) and delete
	// (DELETE) over HTTP; only typed codecs.
	writable bool
	// internalType names the API server's internal Go type, which its
	// NotAcceptable messages for PartialObjectMetadata print ("*core.Pod").
	internalType string
	// prefix starts the tree key of every object of the resource, as
	// "/registry/<resource>/" does in etcd: "<group>/<resource>/".
	prefix string
	codec  codec
	// convertField maps a field selector label to the field matched, or
	// fails as the API server's field label conversion does.
	convertField func(label, value string) (string, string, error)
	// fieldNames are the selectable fields other than metadata.name and
	// metadata.namespace; fieldValues returns their values, in order.
	fieldNames  []string
	fieldValues func(Object) []string
	// full frames whole objects of the resource.
	full *view
	// primary is the encoding compact versions are kept in: protobuf, or
	// JSON for a custom resource.
	primary encoding
	// shared, set with Config.EncodedOnly, holds what the resource's
	// compact versions share (the only part of a resource that changes:
	// its tables grow, safely for concurrent use); nil otherwise.
	shared *sharedParts
}

func (r *apiResource) groupResource() schema.GroupResource { return r.gvr.GroupResource() }

// keyRange returns the tree keys [from, end) of the resource's objects in
// namespace ("" = all namespaces).
func (r *apiResource) keyRange(namespace string) (from, end string) {
	if namespace == "" {
		return r.prefix, r.prefix[:len(r.prefix)-1] + "0" // '0' follows '/'
	}
	return r.prefix + namespace + "/", r.prefix + namespace + "0"
}

func (r *apiResource) key(namespace, name string) string { return r.prefix + namespace + "/" + name }

// view is how responses frame one kind of object: whole objects of a
// resource, or PartialObjectMetadata of one meta.k8s.io version. Stored
// encodings carry no kind/apiVersion; a view supplies them.
type view struct {
	meta bool // objects are PartialObjectMetadata: the encMeta… encodings
	// objJSON replaces an encoding's leading '{' in a single object or
	// watch event: `{"kind":"Pod","apiVersion":"v1",`.
	objJSON []byte
	// objProto is the runtime.Unknown typeMeta field of the protobuf envelope.
	objProto []byte
	// listJSON starts a JSON list up to its metadata.
	listJSON []byte
	// itemJSON replaces the leading '{' of each JSON list item; nil writes
	// items as stored (typed lists carry no kind in their items).
	itemJSON []byte
	// listProto is the envelope typeMeta of a list; listMetaField and
	// listItemsField number its ListMeta and items fields.
	listProto                     []byte
	listMetaField, listItemsField int
}

func newView(apiVersion, kind, listKind string, meta, itemsTyped bool, metaField, itemsField int) *view {
	v := &view{
		meta:           meta,
		objJSON:        fmt.Appendf(nil, `{"kind":%s,"apiVersion":%s,`, strconv.Quote(kind), strconv.Quote(apiVersion)),
		objProto:       protoTypeMeta(apiVersion, kind),
		listJSON:       fmt.Appendf(nil, `{"kind":%s,"apiVersion":%s,"metadata":`, strconv.Quote(listKind), strconv.Quote(apiVersion)),
		listProto:      protoTypeMeta(apiVersion, listKind),
		listMetaField:  metaField,
		listItemsField: itemsField,
	}
	if itemsTyped {
		v.itemJSON = v.objJSON
	}
	return v
}

// encoding returns the slot of an object's encodings that this view writes
// in content type ct.
func (v *view) encoding(ct contentType) encoding {
	if v.meta {
		return encoding(ct) + encMetaJSON
	}
	return encoding(ct)
}

// metaViews frame PartialObjectMetadata(List) in the meta.k8s.io versions
// the API server offers. v1beta1's list numbers its fields the other way.
var metaViews = map[string]*view{
	"v1":      newView("meta.k8s.io/v1", "PartialObjectMetadata", "PartialObjectMetadataList", true, true, 1, 2),
	"v1beta1": newView("meta.k8s.io/v1beta1", "PartialObjectMetadata", "PartialObjectMetadataList", true, true, 2, 1),
}

// resourceSet holds the served resources.
type resourceSet struct {
	all                                            []*apiResource          // in discovery order
	byPath                                         map[string]*apiResource // "group/version/resource"
	pods, configMaps, deployments, widgets, leases *apiResource
}

func newResourceSet() *resourceSet {
	reg := &resourceSet{byPath: map[string]*apiResource{}}
	reg.pods = reg.add(&apiResource{
		gvr: PodsResource, kind: "Pod", singular: "pod", shortNames: []string{"po"}, categories: []string{"all"},
		internalType: "core.Pod",
		codec:        typed[corev1.Pod](),
		convertField: podFieldLabel,
		fieldNames:   podFieldNames,
		fieldValues:  podFieldValues,
	})
	reg.configMaps = reg.add(&apiResource{
		gvr: ConfigMapsResource, kind: "ConfigMap", singular: "configmap", shortNames: []string{"cm"},
		internalType: "core.ConfigMap",
		codec:        typed[corev1.ConfigMap](),
	})
	reg.deployments = reg.add(&apiResource{
		gvr: DeploymentsResource, kind: "Deployment", singular: "deployment", shortNames: []string{"deploy"},
		categories: []string{"all"}, internalType: "apps.Deployment",
		codec: typed[appsv1.Deployment](),
	})
	reg.widgets = reg.add(&apiResource{
		gvr: WidgetsResource, kind: WidgetKind.Kind, singular: "widget", shortNames: []string{"wd"},
		categories: []string{"all"}, custom: true, internalType: "unstructured.Unstructured",
		codec:        unstructuredCodec{gvk: WidgetKind},
		convertField: customFieldLabel,
	})
	reg.leases = reg.add(&apiResource{
		gvr: LeasesResource, kind: "Lease", singular: "lease", internalType: "coordination.Lease",
		codec: typed[coordinationv1.Lease](), writable: true,
	})
	return reg
}

func (reg *resourceSet) add(r *apiResource) *apiResource {
	r.prefix = r.gvr.Group + "/" + r.gvr.Resource + "/"
	r.full = newView(r.gvr.GroupVersion().String(), r.kind, r.kind+"List", false, r.custom, 1, 2)
	r.primary = encProtobuf
	if r.custom {
		r.primary = encJSON
	}
	if r.convertField == nil {
		r.convertField = runtime.DefaultMetaV1FieldSelectorConversion
	}
	reg.all = append(reg.all, r)
	reg.byPath[r.gvr.Group+"/"+r.gvr.Version+"/"+r.gvr.Resource] = r
	return r
}

// compact makes every resource keep its versions compactly
// (Config.EncodedOnly). REQUIRES: no object stored yet.
func (reg *resourceSet) compact() {
	for _, r := range reg.all {
		r.shared = newSharedParts()
	}
}

// lookup returns the resource served at group/version/resource.
func (reg *resourceSet) lookup(group, version, res string) *apiResource {
	return reg.byPath[group+"/"+version+"/"+res]
}

// groupVersions lists the API groups other than the core group, each with
// its versions, in discovery order.
func (reg *resourceSet) groups() []metav1.APIGroup {
	var out []metav1.APIGroup
	seen := map[string]int{}
	for _, r := range reg.all {
		if r.gvr.Group == "" {
			continue
		}
		gv := metav1.GroupVersionForDiscovery{GroupVersion: r.gvr.GroupVersion().String(), Version: r.gvr.Version}
		i, ok := seen[r.gvr.Group]
		if !ok {
			i = len(out)
			seen[r.gvr.Group] = i
			out = append(out, metav1.APIGroup{Name: r.gvr.Group, PreferredVersion: gv})
		}
		if !containsVersion(out[i].Versions, gv) {
			out[i].Versions = append(out[i].Versions, gv)
		}
	}
	return out
}

func containsVersion(vs []metav1.GroupVersionForDiscovery, v metav1.GroupVersionForDiscovery) bool {
	for _, x := range vs {
		if x == v {
			return true
		}
	}
	return false
}

// resources returns the discovery entries of group/version, or nil.
func (reg *resourceSet) resources(gv schema.GroupVersion) []metav1.APIResource {
	var out []metav1.APIResource
	for _, r := range reg.all {
		if r.gvr.GroupVersion() != gv {
			continue
		}
		verbs := []string{"get", "list", "watch"}
		if r.writable {
			verbs = []string{"create", "delete", "get", "list", "update", "watch"}
		}
		out = append(out, metav1.APIResource{
			Name: r.gvr.Resource, SingularName: r.singular, Namespaced: true, Kind: r.kind,
			Verbs: verbs, ShortNames: r.shortNames, Categories: r.categories,
		})
	}
	slices.SortFunc(out, func(a, b metav1.APIResource) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// customFieldLabel is the API server's field label conversion for a
// namespaced custom resource without selectable fields.
func customFieldLabel(label, value string) (string, string, error) {
	switch label {
	case "metadata.name", "metadata.namespace":
		return label, value, nil
	}
	return "", "", fmt.Errorf("field label not supported: %s", label)
}

// Pods: the field labels of k8s.io/kubernetes pkg/apis/core/v1
// conversion.go and the values of pkg/resourceSet/core/pod ToSelectableFields.
var podFieldNames = []string{
	"spec.nodeName", "spec.restartPolicy", "spec.schedulerName", "spec.serviceAccountName",
	"spec.hostNetwork", "status.phase", "status.podIP", "status.nominatedNodeName",
}

func podFieldLabel(label, value string) (string, string, error) {
	switch label {
	case "metadata.name", "metadata.namespace", "spec.nodeName", "spec.restartPolicy", "spec.schedulerName",
		"spec.serviceAccountName", "spec.hostNetwork", "status.phase", "status.podIP", "status.podIPs",
		"status.nominatedNodeName":
		return label, value, nil
	case "spec.host":
		return "spec.nodeName", value, nil
	}
	return "", "", fmt.Errorf("field label not supported: %s", label)
}

func podFieldValues(o Object) []string {
	p := o.(*corev1.Pod)
	podIP := p.Status.PodIP
	if len(p.Status.PodIPs) > 0 {
		podIP = p.Status.PodIPs[0].IP
	}
	return []string{
		p.Spec.NodeName, string(p.Spec.RestartPolicy), p.Spec.SchedulerName, p.Spec.ServiceAccountName,
		strconv.FormatBool(p.Spec.HostNetwork), string(p.Status.Phase), podIP, p.Status.NominatedNodeName,
	}
}
