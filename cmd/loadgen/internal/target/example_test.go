package target_test

import (
	"context"
	"fmt"

	"github.com/shardinformer/shardinformer/cmd/loadgen/internal/target"
)

func ExampleChurner() {
	ctx := context.Background()
	cfg := target.Config{Namespaces: 2, Seed: 1, ChurnEvents: 10, Mix: target.Mix{Update: 1}}
	t, err := target.NewSim(cfg)
	if err != nil {
		panic(err)
	}
	defer t.Close(ctx)
	if err := t.Populate(ctx, 100, func(int) {}); err != nil {
		panic(err)
	}
	g := target.NewChurner(t, cfg)
	if err := g.Run(ctx, 100); err != nil {
		panic(err)
	}
	n := g.Counts()
	fmt.Println(t.Namespace(1), target.PodName(1), n.Updates, n.Emitted())
	// Output: loadgen-001 pod-000001 10 10
}
