//go:build unix

// Command cluster starts a local etcd + kube-apiserver pair (the binaries
// from hack/build-cluster-bins.sh), prints the kubeconfig path and runs until
// interrupted, then stops both processes and removes their directory.
//
//	go run ./e2e/cmd/cluster -kubeconfig-out=/tmp/shardinformer.kubeconfig
//	kubectl --kubeconfig=/tmp/shardinformer.kubeconfig get pods -A
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/shardinformer/shardinformer/e2e/cluster"
)

type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, " ") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }

func main() {
	var (
		out      = flag.String("kubeconfig-out", "", "also copy the kubeconfig to this path (removed on exit)")
		keep     = flag.Bool("keep", false, "keep the data/log directory on exit")
		apiArgs  multiFlag
		etcdArgs multiFlag
	)
	flag.Var(&apiArgs, "apiserver-arg", "extra kube-apiserver flag, repeatable (e.g. --feature-gates=ShardedListAndWatch=true)")
	flag.Var(&etcdArgs, "etcd-arg", "extra etcd flag, repeatable")
	flag.Parse()
	log.SetFlags(log.Ltime)

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	c, err := cluster.Start(ctx, cluster.Options{
		APIServerArgs: apiArgs,
		EtcdArgs:      etcdArgs,
		KeepDir:       *keep,
		Logf:          log.Printf,
	})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Stop()

	path := c.Kubeconfig()
	if *out != "" {
		b, err := os.ReadFile(path)
		if err == nil {
			err = os.WriteFile(*out, b, 0o600)
		}
		if err != nil {
			c.Stop()
			log.Fatal(err)
		}
		defer os.Remove(*out)
		path = *out
	}
	fmt.Printf("kubeconfig: %s\nlogs:       %s\nexport KUBECONFIG=%s\nPress Ctrl-C to stop.\n", path, c.Dir(), path)
	<-ctx.Done()
	log.Print("stopping")
}
