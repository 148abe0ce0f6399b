package apisim

import (
	"cmp"
	"reflect"
	"runtime"
	"sync"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Objects is the in-process write and read API of one resource of a
// Server: what Server.Create, Update, … are for pods, for any served
// resource. T is the resource's Go type (*corev1.ConfigMap, …;
// *unstructured.Unstructured for custom resources).
//
// Every write makes one new version with the store's next global
// resourceVersion, and one watch event. Objects passed in are copied
// (except by Load); objects returned are copies the caller owns. All
// methods are safe for concurrent use. Get one with Server.Pods,
// ConfigMaps, Deployments or Widgets.
type Objects[T Object] struct {
	st  *store
	res *apiResource
}

func objectsOf[T Object](s *Server, res *apiResource) *Objects[T] {
	return &Objects[T]{st: s.st, res: res}
}

// Pods returns the pod API; Server.Create and friends are shorthands for it.
func (s *Server) Pods() *Objects[*corev1.Pod] { return objectsOf[*corev1.Pod](s, s.reg.pods) }

// ConfigMaps returns the core/v1 configmaps API.
func (s *Server) ConfigMaps() *Objects[*corev1.ConfigMap] {
	return objectsOf[*corev1.ConfigMap](s, s.reg.configMaps)
}

// Deployments returns the apps/v1 deployments API.
func (s *Server) Deployments() *Objects[*appsv1.Deployment] {
	return objectsOf[*appsv1.Deployment](s, s.reg.deployments)
}

// Widgets returns the API of the custom resource WidgetsResource. Objects
// without apiVersion and kind get WidgetKind's; others must name it.
func (s *Server) Widgets() *Objects[*unstructured.Unstructured] {
	return objectsOf[*unstructured.Unstructured](s, s.reg.widgets)
}

// Resource returns the group, version and resource served.
func (o *Objects[T]) Resource() schema.GroupVersionResource { return o.res.gvr }

func isNil[T Object](obj T) bool {
	v := reflect.ValueOf(obj)
	return !v.IsValid() || (v.Kind() == reflect.Pointer && v.IsNil())
}

// Create stores a copy of obj as a new object and returns the stored
// version: resourceVersion (the store's next global version), uid and, if
// unset, creationTimestamp assigned. An object with generateName and no
// name gets a generated name. Errors are API status errors: AlreadyExists,
// BadRequest (nil object, missing namespace or name, resourceVersion set, a
// custom resource of another kind).
func (o *Objects[T]) Create(obj T) (T, error) { return o.copyIn(obj, o.st.create) }

// copyIn runs write on obj (which write copies) and returns the stored version.
func (o *Objects[T]) copyIn(obj T, write func(*apiResource, Object) (Object, error)) (T, error) {
	var zero T
	if isNil(obj) {
		return zero, badRequest("apisim: nil %s", o.res.singular)
	}
	out, err := write(o.res, obj)
	if err != nil {
		return zero, err
	}
	return out.(T), nil
}

// Update replaces the stored object with a copy of obj and returns the
// stored version. If obj's resourceVersion is set and is not the current
// version the update fails with Conflict (optimistic concurrency); if it
// is empty the update is unconditional. uid and creationTimestamp are kept
// from the stored object. Unlike the API server, an update that changes
// nothing still produces a new version and a MODIFIED event. NotFound if
// absent.
func (o *Objects[T]) Update(obj T) (T, error) { return o.copyIn(obj, o.st.update) }

// Modify applies fn to a copy of the current object namespace/name and
// stores the result unconditionally, retrying fn if another writer
// interleaves. It is the cheapest way to churn (one copy per write) and
// returns the resulting resourceVersion. fn must not keep the object; it
// cannot rename it. NotFound if absent.
func (o *Objects[T]) Modify(namespace, name string, fn func(T)) (uint64, error) {
	return o.st.modify(o.res, namespace, name, func(obj Object) { fn(obj.(T)) })
}

// Delete removes the object and returns its final state, stamped with the
// deletion's resourceVersion (the object watchers receive). NotFound if
// absent.
func (o *Objects[T]) Delete(namespace, name string) (T, error) {
	out, err := o.st.delete(o.res, namespace, name, preconditions{})
	if err != nil {
		var zero T
		return zero, err
	}
	return out.(T), nil
}

// Load creates objs in order, taking ownership of them: the caller must not
// use them afterwards. It is Create without the copies, for filling a large
// store quickly: objects are published in batches of up to loadBatch, each
// batch at once (one event and resourceVersion per object, as with
// Create). It stops at the first error, having created the objects before
// the failing one. With Config.EncodedOnly the new versions are encoded on
// all cores while Load inserts the next ones.
func (o *Objects[T]) Load(objs []T) error {
	st := newSettler(o.res)
	defer st.wait()
	batch := make([]Object, 0, min(len(objs), loadBatch))
	flush := func() error {
		vs, err := o.st.insertBatch(o.res, batch)
		for _, v := range vs {
			st.add(v)
		}
		batch = batch[:0]
		return err
	}
	for _, obj := range objs {
		if isNil(obj) {
			return cmp.Or(flush(), badRequest("apisim: nil %s", o.res.singular))
		}
		if err := o.st.prepareCreate(o.res, obj); err != nil {
			return cmp.Or(flush(), err) // the first error, in order
		}
		batch = append(batch, obj)
		if len(batch) == loadBatch {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	return flush()
}

// loadBatch is the most objects Load publishes at once.
const loadBatch = 1024

// settler settles the versions a bulk load inserts on GOMAXPROCS goroutines
// (compact resources only; otherwise it does nothing). Used by one
// goroutine, which starts the workers with newSettler and waits for them
// with wait.
type settler struct {
	work  chan []*object
	batch []*object
	wg    sync.WaitGroup
}

const settleBatch = 64

func newSettler(res *apiResource) *settler {
	st := &settler{}
	if res.shared == nil {
		return st
	}
	st.work = make(chan []*object, 4)
	for range runtime.GOMAXPROCS(0) {
		st.wg.Go(func() { // goroutine: a bulk load's encoder, owned by Load via wait
			for batch := range st.work {
				for _, v := range batch {
					v.settle()
				}
			}
		})
	}
	return st
}

func (st *settler) add(v *object) {
	if st.work == nil {
		return
	}
	st.batch = append(st.batch, v)
	if len(st.batch) == settleBatch {
		st.work <- st.batch
		st.batch = make([]*object, 0, settleBatch)
	}
}

// wait settles the rest and waits for the workers.
func (st *settler) wait() {
	if st.work == nil {
		return
	}
	if len(st.batch) > 0 {
		st.work <- st.batch
	}
	close(st.work)
	st.wg.Wait()
}

// Get returns a copy of the current object namespace/name.
func (o *Objects[T]) Get(namespace, name string) (T, bool) {
	obj, ok := o.st.get(o.res, namespace, name)
	if !ok {
		var zero T
		return zero, false
	}
	return obj.(T), true
}

// List returns copies of the current objects in namespace ("" for all), in
// key order.
func (o *Objects[T]) List(namespace string) []T {
	objs := o.st.list(o.res, namespace)
	out := make([]T, len(objs))
	for i, obj := range objs {
		out[i] = obj.(T)
	}
	return out
}

// ResourceVersions returns "namespace/name" → resourceVersion of the
// current objects in namespace ("" for all), without copying or decoding
// any: what a check of a client's cache against the server needs.
func (o *Objects[T]) ResourceVersions(namespace string) map[string]string {
	return o.st.resourceVersions(o.res, namespace)
}

// Len returns the number of stored objects of the resource.
func (o *Objects[T]) Len() int { return o.st.count(o.res) }
