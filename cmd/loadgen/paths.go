package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/shardinformer/shardinformer/apisim"
	"github.com/shardinformer/shardinformer/cmd/loadgen/internal/protocol"
	"github.com/shardinformer/shardinformer/cmd/loadgen/internal/report"
	"github.com/shardinformer/shardinformer/cmd/loadgen/internal/target"
	"github.com/shardinformer/shardinformer/crcache"
	ourinformers "github.com/shardinformer/shardinformer/informers"
	ourdynamic "github.com/shardinformer/shardinformer/informers/dynamicinformer"
	ourmetadata "github.com/shardinformer/shardinformer/informers/metadatainformer"
	"github.com/shardinformer/shardinformer/pipeline"
	"github.com/shardinformer/shardinformer/wire"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	metadataclient "k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	ctrlcache "sigs.k8s.io/controller-runtime/pkg/cache"
)

// Paths, as --path spells them: the way users build an informer, which both
// implementations are built through, each with its own library's entry point.
const (
	pathTyped             = "typed"              // the typed informer factory
	pathDynamic           = "dynamic"            // the dynamic informer factory
	pathMetadata          = "metadata"           // the metadata informer factory
	pathControllerRuntime = "controller-runtime" // a controller-runtime cache
)

var paths = []string{pathTyped, pathDynamic, pathMetadata, pathControllerRuntime}

// resourceOn is the resource of path on a target of kind targetKind: the
// simulator serves the dynamic path a pod-sized custom resource; a cluster,
// which has no such resource, pods.
func resourceOn(path, targetKind string) string {
	if path == pathDynamic && targetKind == target.KindSim {
		return target.ResourceWidgets
	}
	return target.ResourcePods
}

func resourceGVR(resource string) schema.GroupVersionResource {
	if resource == target.ResourceWidgets {
		return apisim.WidgetsResource
	}
	return corev1.SchemeGroupVersion.WithResource("pods")
}

// applyPath checks the flags against --path and sets what the path fixes:
// the content type of the dynamic client (JSON) and of the metadata client
// (protobuf). explicitContentType says whether --content-type was given.
func (c *config) applyPath(explicitContentType bool) []error {
	if !slices.Contains(paths, c.path) {
		return []error{fmt.Errorf("--path %q: want one of %s", c.path, strings.Join(paths, ", "))}
	}
	if c.path == pathTyped {
		return nil
	}
	var errs []error
	if c.scenario != report.ScenarioInformer && c.scenario != report.ScenarioScale {
		errs = append(errs, fmt.Errorf("--path %s runs the informer scenario only (--scenario informer), not %s: the controller and replicas scenarios are the typed path's (--scenario scale sweeps the informer scenario on it)", c.path, c.scenario))
	}
	for _, name := range c.impls {
		if v := c.variants[name]; v.core == report.ImplClientGo && v.decoder == decoderWire {
			errs = append(errs, fmt.Errorf("--path %s: --impl %s: this path builds each implementation through its library's entry point, and no client-go one takes the wire (client-go+wire is the typed path's, built by hand)", c.path, name))
		}
	}
	want := map[string]string{pathDynamic: "json", pathMetadata: "protobuf"}[c.path]
	switch {
	case want == "":
	case explicitContentType && c.contentType != want:
		errs = append(errs, fmt.Errorf("--path %s lists %s (its client's encoding%s); drop --content-type %s", c.path, want,
			map[string]string{pathDynamic: ", and the custom resource's", pathMetadata: ""}[c.path], c.contentType))
	default:
		c.contentType = want
	}
	return errs
}

// informerSource is an implementation's informer as its path built it.
type informerSource struct {
	inf cache.SharedIndexInformer // as the path hands it out (ours may be behind client-go's typed wrapper)
	// run runs the factory, cache or informer until ctx ends and returns
	// once every goroutine it started has exited.
	run func(ctx context.Context) error
	// listWatch says what lists and watches for a client-go informer (ours
	// say it in their Stats).
	listWatch string
}

// buildInformer builds (does not start) sp's informer through sp's path, on
// rc: the one place that chooses how each implementation is constructed.
// pipe are ours' pipeline options; extra are indexers beyond the namespace
// index every path's informer has. cs is the typed clientset (typed path only).
func buildInformer(sp protocol.Spec, rc *rest.Config, pipe []pipeline.Option, extra cache.Indexers) (src informerSource, cs kubernetes.Interface, err error) {
	narrow := sp.Endpoint.Narrow
	ours := sp.Core == report.ImplOurs
	gvr := resourceGVR(sp.Resource)
	switch sp.Path {
	case pathTyped, "":
		if cs, err = kubernetes.NewForConfig(rc); err != nil {
			return src, nil, fmt.Errorf("clientset: %w", err)
		}
		switch {
		case ours:
			opts := []ourinformers.SharedInformerOption{ourinformers.WithTweakListOptions(narrow), ourinformers.WithPipelineOptions(pipe...)}
			if sp.Decoder == decoderWire {
				opts = append(opts, ourinformers.WithWireOptions(wireOptions(sp)...))
			} else {
				opts = append(opts, ourinformers.WithoutWire())
			}
			f := ourinformers.NewSharedInformerFactoryWithOptions(cs, 0, opts...)
			src = factorySource(f.Core().V1().Pods().Informer(), f)
		case sp.Decoder == decoderWire:
			lw, _, err := listerWatcher(sp, cs)
			if err != nil {
				return src, nil, err
			}
			inf := cache.NewSharedIndexInformer(lw, &corev1.Pod{}, 0, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
			src = informerSource{inf: inf, run: func(ctx context.Context) error { inf.RunWithContext(ctx); return nil }, listWatch: describeLW(lw)}
		default:
			f := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithTweakListOptions(narrow))
			src = factorySource(f.Core().V1().Pods().Informer(), f)
			src.listWatch = "clientset.CoreV1().Pods() List/Watch: client-go's REST client and decoder"
		}
	case pathDynamic:
		dc, err := dynamic.NewForConfig(rc)
		if err != nil {
			return src, nil, fmt.Errorf("dynamic client: %w", err)
		}
		res := gvr.Resource + "." + gvr.GroupVersion().String()
		if ours {
			opts := []ourdynamic.Option{ourdynamic.WithTweakListOptions(narrow), ourdynamic.WithPipelineOptions(pipe...)}
			if sp.Decoder == decoderWire {
				opts = append(opts, ourdynamic.WithWireOptions(wireOptions(sp)...))
			} else {
				opts = append(opts, ourdynamic.WithoutWire())
			}
			f, err := ourdynamic.New(dc, 0, opts...)
			if err != nil {
				return src, nil, err
			}
			src = factorySource(f.ForResource(gvr).Informer(), f)
		} else {
			f := dynamicinformer.NewFilteredDynamicSharedInformerFactory(dc, 0, "", narrow)
			src = factorySource(f.ForResource(gvr).Informer(), f)
			src.listWatch = "dynamic client List/Watch of " + res + ": JSON, client-go's decoder"
		}
	case pathMetadata:
		mc, err := metadataclient.NewForConfig(rc)
		if err != nil {
			return src, nil, fmt.Errorf("metadata client: %w", err)
		}
		if ours {
			opts := []ourmetadata.SharedInformerOption{ourmetadata.WithTweakListOptions(narrow), ourmetadata.WithPipelineOptions(pipe...)}
			if sp.Decoder == decoderWire {
				opts = append(opts, ourmetadata.WithWireOptions(wireOptions(sp)...))
			} else {
				opts = append(opts, ourmetadata.WithoutWire())
			}
			f := ourmetadata.NewSharedInformerFactoryWithOptions(mc, 0, opts...)
			src = factorySource(f.ForResource(gvr).Informer(), f)
		} else {
			f := metadatainformer.NewFilteredSharedInformerFactory(mc, 0, "", narrow)
			src = factorySource(f.ForResource(gvr).Informer(), f)
			src.listWatch = "metadata client List/Watch of pods.v1: PartialObjectMetadata, protobuf, client-go's decoder"
		}
	case pathControllerRuntime:
		var opts ctrlcache.Options
		if sp.Endpoint.Kind == target.KindCluster {
			opts.DefaultLabelSelector = labels.SelectorFromSet(labels.Set{target.LabelRun: sp.Endpoint.RunID})
		}
		newCache := ctrlcache.New
		if ours {
			copts := []crcache.Option{crcache.WithPipelineOptions(pipe...)}
			if sp.Decoder == decoderWire {
				copts = append(copts, crcache.WithWireOptions(wireOptions(sp)...))
			} else {
				copts = append(copts, crcache.WithoutWire())
			}
			if newCache, err = crcache.NewFunc(copts...); err != nil {
				return src, nil, err
			}
		}
		cc, err := newCache(rc, opts)
		if err != nil {
			return src, nil, fmt.Errorf("controller-runtime cache: %w", err)
		}
		// Not started yet, so GetInformer only creates the informer.
		i, err := cc.GetInformer(context.Background(), &corev1.Pod{})
		if err != nil {
			return src, nil, fmt.Errorf("controller-runtime cache: GetInformer: %w", err)
		}
		inf, ok := i.(cache.SharedIndexInformer)
		if !ok {
			return src, nil, fmt.Errorf("controller-runtime cache: the pod informer is a %T, not a cache.SharedIndexInformer", i)
		}
		src = informerSource{inf: inf, run: cc.Start}
		if !ours {
			src.listWatch = "controller-runtime's list/watch of pods: client-go's REST client and decoder"
		}
	default:
		return src, nil, fmt.Errorf("unknown path %q", sp.Path)
	}
	if len(extra) > 0 {
		if err := src.inf.AddIndexers(extra); err != nil {
			return src, nil, fmt.Errorf("add indexers: %w", err)
		}
	}
	return src, cs, nil
}

// factory is what every informer factory has for running its informers.
type factory interface {
	Start(stopCh <-chan struct{})
	Shutdown()
}

// factorySource runs inf through f: Start, and at the end Shutdown, which
// returns once every informer's goroutines have.
func factorySource(inf cache.SharedIndexInformer, f factory) informerSource {
	return informerSource{inf: inf, run: func(ctx context.Context) error {
		f.Start(ctx.Done())
		<-ctx.Done()
		f.Shutdown()
		return nil
	}}
}

// describeImpl is the report's line for an implementation of core on
// decoder built through path on resource: which entry point built it, with
// what.
func describeImpl(path, core, decoder, resource string) string {
	gvr := resourceGVR(resource)
	res := gvr.Resource + "." + gvr.GroupVersion().String()
	ours := core == report.ImplOurs
	wireOpt := "WithWireOptions" // ours: how it is told about the wire
	if decoder != decoderWire {
		wireOpt = "WithoutWire"
	}
	switch path {
	case pathDynamic:
		if ours {
			return "shardinformer informers/dynamicinformer.New(dynamic client, 0, WithTweakListOptions, WithPipelineOptions, " + wireOpt + ").ForResource(" + res + ").Informer(): pipeline.Informer, unstructured"
		}
		return "client-go dynamicinformer.NewFilteredDynamicSharedInformerFactory(dynamic client, 0, \"\", tweak).ForResource(" + res + ").Informer(): cache.SharedIndexInformer, unstructured"
	case pathMetadata:
		if ours {
			return "shardinformer informers/metadatainformer.NewSharedInformerFactoryWithOptions(metadata client, 0, WithTweakListOptions, WithPipelineOptions, " + wireOpt + ").ForResource(pods.v1).Informer(): pipeline.Informer, PartialObjectMetadata"
		}
		return "client-go metadatainformer.NewFilteredSharedInformerFactory(metadata client, 0, \"\", tweak).ForResource(pods.v1).Informer(): cache.SharedIndexInformer, PartialObjectMetadata"
	case pathControllerRuntime:
		if ours {
			return "shardinformer crcache.NewFunc(WithPipelineOptions, " + wireOpt + ")(rest config, cache.Options{}).GetInformer(&corev1.Pod{}): pipeline.Informer"
		}
		return "client-go controller-runtime cache.New(rest config, cache.Options{}).GetInformer(&corev1.Pod{}): cache.SharedIndexInformer"
	}
	switch {
	case ours:
		return "shardinformer informers.NewSharedInformerFactoryWithOptions(clientset, 0, WithTweakListOptions, WithPipelineOptions, " + wireOpt + ").Core().V1().Pods().Informer(): pipeline.Informer"
	case decoder == decoderWire:
		return "client-go cache.NewSharedIndexInformer on wire.New, built by hand (no client-go factory takes another ListerWatcher)"
	}
	return "client-go informers.NewSharedInformerFactoryWithOptions(clientset, 0, WithTweakListOptions).Core().V1().Pods().Informer(): cache.SharedIndexInformer"
}

// wireOptions are the wire options sp asks for, given to our factory or
// cache after its default diet (so +no-diet turns it off) and to client-go's
// informer built by hand.
func wireOptions(sp protocol.Spec) []wire.Option {
	var opts []wire.Option
	if sp.WireWorkers > 0 {
		opts = append(opts, wire.WithWorkers(sp.WireWorkers))
	}
	if sp.ContentType == "json" {
		opts = append(opts, wire.WithContentType(wire.JSON))
	}
	if sp.Diet {
		opts = append(opts, wire.WithDiet())
	} else {
		opts = append(opts, wire.WithoutDiet())
	}
	return opts
}

// describeLW names a ListerWatcher as pipeline's Stats do.
func describeLW(lw any) string {
	if s, ok := lw.(fmt.Stringer); ok {
		return s.String()
	}
	return fmt.Sprintf("%T", lw)
}

// decoderOf is the report's decoder of a list/watch description: the wire's
// ListerWatcher describes itself "wire …".
func decoderOf(listWatch string) string {
	if strings.HasPrefix(listWatch, "wire ") {
		return decoderWire
	}
	return decoderClientGo
}

var errInformerEnded = errors.New("the informer ended before it synced")
