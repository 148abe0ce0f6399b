package protocol

import (
	"time"

	"github.com/shardinformer/shardinformer/cmd/loadgen/internal/report"
	"github.com/shardinformer/shardinformer/cmd/loadgen/internal/target"
)

// ChildFlag, as the first argument, makes loadgen run one implementation
// under test for a parent loadgen: spec on stdin, commands after it, messages
// on stdout (JSON lines). It is not a user flag and not in --help.
const ChildFlag = "--internal-child"

// Messages from an implementation under test to the parent (Message.Type).
const (
	MsgSample    = "sample"     // Sample: a timeline point
	MsgSynced    = "synced"     // At: the informer and its handlers synced
	MsgReady     = "ready"      // At: every initial object handled (reconciled once)
	MsgWantState = "want-state" // the client needs the server's state to check against
	MsgCaughtUp  = "caught-up"  // Check: the check ended (passed or timed out); measurements taken
	MsgResult    = "result"     // Result: the implementation's figures, after its heap was measured
	MsgMetrics   = "metrics"    // URL: the metrics endpoint serves
	MsgSoak      = "soak"       // Soak: a soak sample
	MsgError     = "error"      // Error: the client failed
	MsgExit      = "exit"       // added by the parent: the client's process or goroutine ended
)

// Commands from the parent (Command.Cmd).
const (
	CmdChurnStart = "churn-start" // At: when the churn started
	CmdChurnEnd   = "churn-end"   // At: when it ended
	CmdState      = "state"       // State, Final
	CmdFinish     = "finish"      // Deletes: measure the heap, send the result
)

// Message is what a child (or an in-process client) tells the parent;
// Type says which fields are set.
type Message struct {
	Type   string             `json:"type"`
	At     int64              `json:"at,omitempty"` // unix nanos
	Sample *Sample            `json:"sample,omitempty"`
	Check  *report.Check      `json:"check,omitempty"`
	Result *report.ImplResult `json:"result,omitempty"`
	URL    string             `json:"url,omitempty"`
	Error  string             `json:"error,omitempty"`
	// A replica's result (replicas scenario) comes in two messages: its
	// final state for the checks, then its figures.
	ReplicaState  *ReplicaState          `json:"replica_state,omitempty"`
	ReplicaResult *report.ReplicaFigures `json:"replica_result,omitempty"`
	// DidNotFit: added by the parent to MsgExit when the child did not fit
	// (cmd/loadgen/fit.go).
	DidNotFit *report.DidNotFit `json:"did_not_fit,omitempty"`
	// Soak: a soak sample (soak scenario).
	Soak *report.SoakPoint `json:"soak,omitempty"`
}

// Command is what the parent tells a child; Cmd says which fields are set.
type Command struct {
	Cmd   string            `json:"cmd"`
	At    int64             `json:"at,omitempty"`
	State map[string]string `json:"state,omitempty"` // key → resourceVersion on the server
	// Final: the state will not change any more (nothing writes after the
	// churn), so the client re-checks against it instead of asking again.
	Final bool `json:"final,omitempty"`
	// Deletes: key → emission stamp (unix nanos) of every churn delete.
	Deletes map[string]int64 `json:"deletes,omitempty"`
	// Emitted: churn-end: the number of churn writes.
	Emitted uint64 `json:"emitted,omitempty"`
}

// Sample is one point of an implementation's timeline.
type Sample struct {
	At       int64          `json:"at"`                // unix nanos
	Synced   int            `json:"synced"`            // initial objects handled
	Observed uint64         `json:"observed"`          // churn events seen (fewest over handlers)
	Done     uint64         `json:"done"`              // reconciles (controller) or handler calls (informer)
	Heap     uint64         `json:"heap"`              // process heap objects, bytes
	RSS      uint64         `json:"rss"`               // process resident set, bytes
	CPU      float64        `json:"cpu"`               // process CPU seconds since the client started
	GC       uint64         `json:"gc"`                // GC cycles completed since the process started
	Lat      *LatencyWindow `json:"lat,omitempty"`     // latencies recorded since the previous sample
	Replica  *ReplicaSample `json:"replica,omitempty"` // replicas scenario
}

// LatencyWindow summarizes the latencies recorded between two samples, so a
// report can tell a burst (a GC cycle, a neighbour) from a steady cost.
type LatencyWindow struct {
	N   uint64  `json:"n"`
	P50 float64 `json:"p50"` // seconds
	P99 float64 `json:"p99"`
}

// Spec is everything one implementation under test needs: the parent sends
// it to a child process as JSON, or hands it to an in-process client.
type Spec struct {
	Scenario       string          `json:"scenario"`          // report.ScenarioInformer, ScenarioController or ScenarioReplicas
	Path           string          `json:"path"`              // the user path it is built through (cmd/loadgen/paths.go); "" = typed
	Resource       string          `json:"resource"`          // target.ResourcePods or ResourceWidgets; "" = pods
	Impl           string          `json:"impl"`              // the implementation's name (cmd/loadgen/variant.go)
	Core           string          `json:"core"`              // report.ImplOurs or report.ImplClientGo
	Decoder        string          `json:"decoder"`           // "wire" or "client-go"
	Diet           bool            `json:"diet"`              // wire only
	Compact        bool            `json:"compact,omitempty"` // ours only: pipeline.WithCompactStore
	WireWorkers    int             `json:"wire_workers"`
	Pods           int             `json:"pods"`
	Namespaces     int             `json:"namespaces"`
	Endpoint       target.Endpoint `json:"endpoint"`
	Handlers       int             `json:"handlers"`
	HandlerWorkers int             `json:"handler_workers"`
	HandlerIters   int64           `json:"handler_iters"`
	Readers        int             `json:"readers"`
	Workers        int             `json:"workers"`
	ReconcileIters int64           `json:"reconcile_iters"`
	Shards         int             `json:"shards"`
	RingSize       int             `json:"ring_size"`
	Policy         string          `json:"policy"`
	ContentType    string          `json:"content_type"`
	WatchList      string          `json:"watchlist"`
	Seed           int64           `json:"seed"`
	Quiesce        time.Duration   `json:"quiesce"`
	Profile        string          `json:"profile,omitempty"`
	ProfileDir     string          `json:"profile_dir,omitempty"`
	MetricsAddr    string          `json:"metrics_addr,omitempty"`
	// MemLimit is --child-mem-limit: the parent kills the child when its
	// resident set is above it, and the child sets its Go soft memory limit
	// below it (cmd/loadgen/fit.go); 0 = none.
	MemLimit int64 `json:"mem_limit,omitempty"`
	// SoakEvery: the soak scenario's sampling period; 0 = none.
	// SampleEvery: the timeline's period after ready; 0 = the child's default.
	SoakEvery   time.Duration `json:"soak_every,omitempty"`
	SampleEvery time.Duration `json:"sample_every,omitempty"`
	// Process: this implementation is alone in its process, so process-wide
	// CPU, heap, RSS and GC are its own.
	Process bool `json:"process"`
	// Replica: the replicas scenario's replica (Scenario replicas).
	Replica *ReplicaSpec `json:"replica,omitempty"`
}

// ReplicaSpec is what a replica process needs beyond its Spec: its identity
// and the group's settings, the same for every replica of a trial.
type ReplicaSpec struct {
	Identity      string        `json:"identity"`
	Group         string        `json:"group"`
	Namespace     string        `json:"namespace"` // of the Leases
	Slots         int           `json:"slots"`
	LeaseDuration time.Duration `json:"lease_duration"`
	RenewDeadline time.Duration `json:"renew_deadline"`
	RenewInterval time.Duration `json:"renew_interval"`
}

// ReplicaSample is the replica's part of a timeline sample.
type ReplicaSample struct {
	Keys        int64  `json:"keys"`         // keys reconciled and still in view (the controller's len(reconciled))
	ActiveSlots []int  `json:"active_slots"` // slots with at least one object in the handler's view
	Informers   int    `json:"informers"`    // slot informers running
	Queue       int    `json:"queue"`        // work queue length
	Objects     uint64 `json:"objects"`      // pod objects decoded: list items and watch events
	Bytes       uint64 `json:"bytes"`        // pod list and watch response bytes read
}

// ReplicaState is a replica's final view for the parent's checks; it is
// not part of the report.
type ReplicaState struct {
	View       map[string]string `json:"view"`       // key → resourceVersion the handler last saw
	Reconciled map[string]string `json:"reconciled"` // key → resourceVersion last reconciled
	Spans      []KeySpan         `json:"spans"`      // every stay of a key in the view
}

// KeySpan is one stay of a key in a replica's view: from the start of the
// handler call that added it to the end of the one that took it out
// (unix nanos; To 0: still in view).
type KeySpan struct {
	Key  string `json:"k"`
	From int64  `json:"f"`
	To   int64  `json:"t,omitempty"`
}
