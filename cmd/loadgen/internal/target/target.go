package target

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	goruntime "runtime"
	"sync"

	"github.com/shardinformer/shardinformer/apisim"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
)

// Annotations and labels loadgen writes.
const (
	// AnnEmitted is the churn generator's wall clock (unix nanoseconds) just
	// before it sent the write; handlers subtract it from their own clock.
	AnnEmitted = "loadgen.shardinformer.io/emitted-unix-nano"
	// AnnGeneration counts the updates loadgen made to a pod.
	AnnGeneration = "loadgen.shardinformer.io/generation"
	// LabelRun marks everything one run creates in a real cluster.
	LabelRun = "loadgen.shardinformer.io/run"
)

// Resources the informers list and the churn writes, as a spec names them.
const (
	ResourcePods = "pods"
	// ResourceWidgets is apisim's custom resource (apisim.WidgetsResource),
	// each object a pod's content (podWidget): a custom resource as big as
	// a pod. The dynamic path's on the simulator.
	ResourceWidgets = "widgets"
)

// Kinds of target, as Target.Kind and Endpoint.Kind name them.
const (
	KindSim     = "apisim"
	KindCluster = "cluster"
)

// Target is where the pods live: the embedded simulator or a real cluster.
// Its methods are safe for concurrent use.
type Target interface {
	// Kind is KindSim or KindCluster.
	Kind() string
	// Endpoint is how the implementations under test reach it.
	Endpoint() Endpoint
	// Upstream is a REST config that reaches the server itself (the fault
	// proxy's upstream).
	Upstream() *rest.Config
	Namespace(i int) string
	// Populate creates the initial pods 0..n-1, reporting progress.
	Populate(ctx context.Context, n int, progress func(done int)) error
	Create(ctx context.Context, ns, name string, seed int64, emitted int64) error
	Update(ctx context.Context, ns, name string, gen int, emittedNow func() int64) error
	Delete(ctx context.Context, ns, name string) error
	// State returns key → resourceVersion of every pod of this run.
	State(ctx context.Context) (map[string]string, error)
	// Close releases the target; a cluster target deletes what it created.
	Close(ctx context.Context) error
}

// PodName is the name of initial pod i.
func PodName(i int) string { return fmt.Sprintf("pod-%06d", i) }

// PodSeed is the seed of pod i's content in a run of seed.
func PodSeed(seed int64, i int) int64 { return seed<<32 + int64(i) }

// newPod builds pod number seed's content. Pods differ by seed; the same
// seed always gives the same pod.
func newPod(ns, name string, seed int64, managedFields bool) *corev1.Pod {
	return apisim.NewPod(ns, name, seed, apisim.PodOptions{ManagedFields: managedFields})
}

// Sim is the embedded apisim server. Its objects are pods, or
// (ResourceWidgets) its custom resource with a pod's content in each.
type Sim struct {
	srv           *apisim.Server
	resource      string // ResourcePods, "" or ResourceWidgets
	namespaces    int
	seed          int64
	managedFields bool
}

// NewSim returns a simulator for c, not serving yet (Start).
func NewSim(c Config) (*Sim, error) {
	// EncodedOnly: the server's 1.7 GB of decoded pods (at 100k) would
	// otherwise be scanned by every GC cycle of the informers under test,
	// pushing the live heap near loadgen's soft memory limit, where GC
	// assists stall every goroutine and both informers' latency tails measure
	// the collector rather than the informers. Its versions are compact
	// (protobuf deltas against each ReplicaSet's first pod): ≈0.9 KB of
	// heap a pod at 1M pods (bench/results/apisim-1m.md).
	srv, err := apisim.New(apisim.Config{EncodedOnly: true, ShardedListAndWatch: c.ShardedListAndWatch})
	if err != nil {
		return nil, err
	}
	return &Sim{srv: srv, resource: c.Resource, namespaces: c.Namespaces, seed: c.Seed, managedFields: c.ManagedFields}, nil
}

func (t *Sim) Kind() string           { return KindSim }
func (t *Sim) Endpoint() Endpoint     { return Endpoint{Kind: KindSim, Host: t.srv.URL()} }
func (t *Sim) Upstream() *rest.Config { return t.srv.RESTConfig() }
func (t *Sim) Namespace(i int) string { return t.Endpoint().Namespace(i, t.namespaces) }

// Start serves the simulator; call it after Populate, so the bulk load
// needs no HTTP.
func (t *Sim) Start() error { return t.srv.Start() }

// Populate generates the initial pods on GOMAXPROCS goroutines, a chunk at
// a time and a few chunks ahead, and loads each chunk as it is ready
// (apisim.Populate). Nothing is kept between trials: generating a pod
// (NewPod, ≈20–50 µs) costs no more than decoding a kept encoding of it
// would, so the process holds only the server's compact versions (apisim's
// Config.EncodedOnly: ≈1 KB a pod).
func (t *Sim) Populate(ctx context.Context, n int, progress func(int)) error {
	done := 0
	return apisim.Populate(ctx, n, func(i int) *corev1.Pod {
		return newPod(t.Namespace(i), PodName(i), PodSeed(t.seed, i), t.managedFields)
	}, func(pods []*corev1.Pod) error {
		if t.resource == ResourceWidgets {
			ws, err := podWidgets(pods)
			if err != nil {
				return err
			}
			if err := t.srv.Widgets().Load(ws); err != nil {
				return err
			}
		} else if err := t.srv.Load(pods); err != nil {
			return err
		}
		done += len(pods)
		progress(done)
		return nil
	})
}

func (t *Sim) Create(_ context.Context, ns, name string, seed int64, emitted int64) error {
	p := newPod(ns, name, seed, t.managedFields)
	stamp(p, emitted, 0)
	if t.resource == ResourceWidgets {
		w, err := podWidget(p)
		if err != nil {
			return err
		}
		_, err = t.srv.Widgets().Create(w)
		return err
	}
	_, err := t.srv.Create(p)
	return err
}

func (t *Sim) Update(_ context.Context, ns, name string, gen int, emittedNow func() int64) error {
	if t.resource == ResourceWidgets {
		_, err := t.srv.Widgets().Modify(ns, name, func(u *unstructured.Unstructured) { stamp(u, emittedNow(), gen) })
		return err
	}
	_, err := t.srv.Modify(ns, name, func(p *corev1.Pod) { stamp(p, emittedNow(), gen) })
	return err
}

func (t *Sim) Delete(_ context.Context, ns, name string) error {
	if t.resource == ResourceWidgets {
		_, err := t.srv.Widgets().Delete(ns, name)
		return err
	}
	_, err := t.srv.Delete(ns, name)
	return err
}

// State reads the simulator's store in process: key → resourceVersion of
// every object, without decoding one (a LIST would decode every pod in this
// process: ≈45 s of CPU and a garbage-driven heap at 1M pods).
func (t *Sim) State(context.Context) (map[string]string, error) {
	if t.resource == ResourceWidgets {
		return t.srv.Widgets().ResourceVersions(""), nil
	}
	return t.srv.Pods().ResourceVersions(""), nil
}

func (t *Sim) Close(context.Context) error { return t.srv.Close() }

// Preencode makes the simulator encode every stored object in contentType
// ("json" or "protobuf") now, by reading one full list and discarding it,
// so that the clients' initial sync is served from ready bytes and the
// server's encoding CPU does not overlap the client's measurement. (A
// metadata-only list reuses a part of the protobuf encoding; the custom
// resource has JSON only.) Call it after Start.
func (t *Sim) Preencode(ctx context.Context, contentType string) error {
	path := "/api/v1/pods"
	if t.resource == ResourceWidgets {
		path, contentType = "/apis/"+apisim.WidgetsResource.GroupVersion().String()+"/"+apisim.WidgetsResource.Resource, "json"
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, t.srv.URL()+path, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", apisim.ContentTypeJSON)
	if contentType == "protobuf" {
		req.Header.Set("Accept", apisim.ContentTypeProtobuf)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("list: %s", resp.Status)
	}
	_, err = io.Copy(io.Discard, resp.Body)
	return err
}

// podWidget is a custom resource of apisim's widgets with p's content:
// p's metadata, spec and status, so that it is as big as the pod (≈10 KB
// of JSON, 14–17 KB with managedFields).
func podWidget(p *corev1.Pod) (*unstructured.Unstructured, error) {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(p)
	if err != nil {
		return nil, fmt.Errorf("pod %s/%s as a widget: %w", p.Namespace, p.Name, err)
	}
	u := &unstructured.Unstructured{Object: m}
	u.SetGroupVersionKind(apisim.WidgetKind)
	return u, nil
}

// podWidgets converts pods to widgets on GOMAXPROCS goroutines.
func podWidgets(pods []*corev1.Pod) ([]*unstructured.Unstructured, error) {
	out := make([]*unstructured.Unstructured, len(pods))
	errs := make([]error, goruntime.GOMAXPROCS(0))
	var wg sync.WaitGroup
	for w := range errs {
		wg.Go(func() { // one of podWidgets' converters; podWidgets waits for it
			for i := w; i < len(pods); i += len(errs) {
				if out[i], errs[w] = podWidget(pods[i]); errs[w] != nil {
					return
				}
			}
		})
	}
	wg.Wait()
	return out, errors.Join(errs...)
}

// stamp writes the emission time (and, for updates, the generation) into o.
func stamp(o metav1.Object, emitted int64, gen int) {
	a := o.GetAnnotations()
	if a == nil {
		a = map[string]string{}
	}
	a[AnnEmitted] = fmt.Sprint(emitted)
	if gen > 0 {
		a[AnnGeneration] = fmt.Sprint(gen)
	}
	o.SetAnnotations(a)
}
