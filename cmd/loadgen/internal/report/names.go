package report

import "slices"

// The names the report and cmd/loadgen's flags share, as report.json spells
// them.

// Implementations the report compares by name: every figure is set against
// client-go's stack (Figure.VsClientGo), and the verdict a figure carries is
// shardinformer's (Figure.Verdict).
const (
	ImplOurs     = "shardinformer"
	ImplClientGo = "client-go"
	// The two other cells of the 2×2 of cores and decoders (Decomposition):
	// client-go's informer on shardinformer's wire decoder, and
	// shardinformer's core on client-go's decoder.
	ImplClientGoWire       = ImplClientGo + "+wire"
	ImplOursClientGoDecode = ImplOurs + "+client-go-decoder"
)

// Decomposition is the 2×2 of cores and decoders; when every cell of it ran
// the report splits each figure into the core's part and the decoder's
// (Report.Decomposition).
var Decomposition = []string{ImplOurs, ImplClientGo, ImplClientGoWire, ImplOursClientGoDecode}

// HasDecomposition reports whether impls hold the whole 2×2.
func HasDecomposition(impls []string) bool {
	for _, n := range Decomposition {
		if !slices.Contains(impls, n) {
			return false
		}
	}
	return true
}

// Scenarios (Report.Scenario).
const (
	ScenarioInformer   = "informer"   // handlers only: delivery throughput and latency
	ScenarioController = "controller" // a controller: work queue, reconcilers, listers
	ScenarioScale      = "scale"      // the controller (typed path) or informer scenario at several sizes
	ScenarioReplicas   = "replicas"   // a sharded controller in N replica processes
	ScenarioSoak       = "soak"       // the controller scenario held under faults, sampled over time
)

// PathTyped is the typed informer factory's path (Settings.Path), the one
// the headline does not name.
const PathTyped = "typed"

// SweptScenario is the scenario whose trials scenario runs on path: the
// soak holds the controller scenario; the scale scenario sweeps the
// controller scenario on the typed path and the informer scenario on the
// others.
func SweptScenario(scenario, path string) string {
	switch {
	case scenario == ScenarioSoak:
		return ScenarioController
	case scenario != ScenarioScale:
		return scenario
	case path == PathTyped || path == "":
		return ScenarioController
	}
	return ScenarioInformer
}

// Trial modes (Settings.Mode, Trial.Mode).
const (
	ModeProcess    = "process"      // one implementation alone in a child process
	ModeSideBySide = "side-by-side" // every implementation in one process on one stream
)

// CPU scopes (ImplResult.CPUScope): what an implementation's CPU figures
// measure.
const (
	CPUScopeProcess = "process" // its own process: user+system CPU (getrusage)
	CPUScopeLabel   = "label"   // side by side: CPU profile samples of its goroutines
	CPUScopeShared  = "shared"  // side by side without a profile: not separable (0)
)

// ResourceWidgets is what Settings.Resource says when the informers listed
// the simulator's pod-sized custom resource instead of pods.
const ResourceWidgets = "widgets"
