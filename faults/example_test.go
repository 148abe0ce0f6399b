package faults_test

import (
	"context"
	"fmt"
	"io"
	"net/http"

	"github.com/shardinformer/shardinformer/apisim"
	"github.com/shardinformer/shardinformer/faults"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// A proxy in front of the simulated API server answers every list with a
// 429 until StopFaults; client-go's clientset retries after the Retry-After
// and gets through once faults stop.
func Example() {
	sim, _ := apisim.New(apisim.Config{})
	_ = sim.Load([]*corev1.Pod{apisim.NewPod("default", "web", 1, apisim.PodOptions{})})
	_ = sim.Start()
	defer sim.Close()

	p, err := faults.New(faults.Config{
		Upstream: sim.RESTConfig(),
		Seed:     7,
		Rules:    map[faults.Kind]faults.Rule{faults.TooManyRequests: {P: 1, Max: 2}},
	})
	if err != nil {
		panic(err)
	}
	if err := p.Start(); err != nil {
		panic(err)
	}
	defer p.Close()

	resp, _ := http.Get(p.URL() + "/api/v1/pods")
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	fmt.Println("raw GET:", resp.StatusCode, "Retry-After", resp.Header.Get("Retry-After"))

	cs, _ := kubernetes.NewForConfig(p.ClientConfig(sim.RESTConfig()))
	list, err := cs.CoreV1().Pods("").List(context.Background(), metav1.ListOptions{}) // one more 429, retried after 1s
	fmt.Println("client-go List:", len(list.Items), "pods, error", err)
	p.StopFaults()
	fmt.Println("injected:", p.Stats().ByName())
	// Output:
	// raw GET: 429 Retry-After 1
	// client-go List: 1 pods, error <nil>
	// injected: map[410:0 429:2 500:0 cut:0 stall:0]
}
