package members_test

import (
	"context"
	"fmt"

	"k8s.io/client-go/kubernetes"

	"github.com/shardinformer/shardinformer/apisim"
	"github.com/shardinformer/shardinformer/replicas"
	"github.com/shardinformer/shardinformer/replicas/members"
)

// Example joins two replicas to a group through the simulated API
// server's Leases and assigns the hash space to them.
func Example() {
	s, err := apisim.Serve(apisim.Config{})
	if err != nil {
		panic(err)
	}
	defer s.Close()
	cs, err := kubernetes.NewForConfig(s.RESTConfig())
	if err != nil {
		panic(err)
	}
	leases := cs.CoordinationV1().Leases("ctrl-system")
	ctx := context.Background()
	var live []string
	for _, id := range []string{"ctrl-0", "ctrl-1"} {
		m, err := members.New(members.Config{Leases: leases, Group: "my-controller", Identity: id})
		if err != nil {
			panic(err)
		}
		round, err := m.Sync(ctx) // Run(ctx, onError) in a real controller
		if err != nil {
			panic(err)
		}
		live = round.Live
	}
	a, _ := replicas.Assign(live, replicas.DefaultSlots)
	fmt.Println(live, len(a.OwnedSlots("ctrl-0"))+len(a.OwnedSlots("ctrl-1")))
	// Output: [ctrl-0 ctrl-1] 256
}
