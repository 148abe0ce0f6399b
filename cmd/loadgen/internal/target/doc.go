// Package target is where loadgen's pods live and what writes to them: the
// embedded simulated API server ([Sim]) or a real cluster reached through a
// kubeconfig ([Cluster]), both a [Target]; the generation of the initial pods
// (deterministic in the seed, [PodName] and [PodSeed]); the [Endpoint] by
// which the implementations under test reach the server; and the churn
// writer ([Churner]) with its counts ([ChurnCounts]).
//
// Every write carries its emission time in the [AnnEmitted] annotation (and
// an update its generation in [AnnGeneration]), which the handlers under test
// read back. On a cluster everything a run creates carries the [LabelRun]
// label; with Config.ReusePods the pods of one --pods, --namespaces and
// --seed are kept across runs ([ReuseRunID]).
//
// The package knows nothing of loadgen's flags, its report or the stacks
// under test: the command fills a [Config].
//
//	t, err := target.NewSim(cfg)
//	err = t.Populate(ctx, pods, func(done int) {})
//	err = t.Start()
//	g := target.NewChurner(t, cfg)
//	err = g.Run(ctx, pods)
//	counts := g.Counts()
package target
