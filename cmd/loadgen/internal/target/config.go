package target

import (
	"fmt"
	"time"
)

// Config is what a target and its churn are built from. The zero value is a
// simulator of pods without churn; Namespaces must be positive for any pod
// to be named.
type Config struct {
	// Resource is what the simulator serves and the churn writes:
	// ResourcePods ("" is pods too) or ResourceWidgets. A cluster writes pods.
	Resource      string
	Namespaces    int   // the pods are spread over this many namespaces
	Seed          int64 // the same seed writes the same pods and churn
	ManagedFields bool  // generated pods carry managedFields
	// ShardedListAndWatch: the simulator honours shardSelector
	// (apisim.Config.ShardedListAndWatch).
	ShardedListAndWatch bool
	// Kubeconfig is the cluster's (NewCluster).
	Kubeconfig string
	// ReusePods keeps the cluster's pods for later runs (reuse.go).
	ReusePods bool

	// ChurnWorkers is the number of concurrent writers; 0 is 1 on the
	// simulator and 16 on a cluster. A cluster's populate uses at least 16.
	ChurnWorkers  int
	ChurnRate     float64       // writes/s over all writers; 0 = as fast as possible
	ChurnDuration time.Duration // 0 = no time bound
	ChurnEvents   int           // 0 = no count bound; with ChurnDuration 0 too, no churn
	Mix           Mix
	// SteadyPods holds each writer's pod count at its initial size.
	SteadyPods bool
}

// Mix is the relative weight of creates, updates and deletes in the churn.
type Mix struct{ Create, Update, Delete int }

// String is the mix as --mix spells it, create:update:delete.
func (m Mix) String() string { return fmt.Sprintf("%d:%d:%d", m.Create, m.Update, m.Delete) }
