package target

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// Endpoint is how an implementation under test reaches the API server. It
// travels to a child process as JSON; it may be copied.
type Endpoint struct {
	Kind       string `json:"kind"`                 // KindSim or KindCluster
	Host       string `json:"host"`                 // apisim: its URL
	Kubeconfig string `json:"kubeconfig,omitempty"` // cluster
	RunID      string `json:"run_id,omitempty"`     // cluster: the run label's value
	// Proxy: the fault proxy's URL (--faults), which clients reach the
	// server through.
	Proxy string `json:"proxy,omitempty"`
}

// RESTConfig is the configuration that reaches the server, through the
// fault proxy if there is one.
func (e Endpoint) RESTConfig() (*rest.Config, error) {
	rc, err := e.ServerConfig()
	if err == nil && e.Proxy != "" {
		rc = viaProxy(rc, e.Proxy)
	}
	return rc, err
}

// ServerConfig is the configuration that reaches the server itself.
func (e Endpoint) ServerConfig() (*rest.Config, error) {
	if e.Kind == KindCluster {
		rc, err := clientcmd.BuildConfigFromFlags("", e.Kubeconfig)
		if err != nil {
			return nil, err
		}
		rc.QPS, rc.Burst = -1, -1
		return rc, nil
	}
	return &rest.Config{Host: e.Host, QPS: -1, Burst: -1, DisableCompression: true}, nil
}

// Narrow restricts lists and watches to this run's pods.
func (e Endpoint) Narrow(o *metav1.ListOptions) {
	if e.Kind == KindCluster {
		o.LabelSelector = LabelRun + "=" + e.RunID
	}
}

// Namespace is the name of namespace i (of n) of a run on e.
func (e Endpoint) Namespace(i, n int) string {
	if e.Kind == KindCluster {
		return fmt.Sprintf("loadgen-%s-%03d", e.RunID, i%n)
	}
	return fmt.Sprintf("loadgen-%03d", i%n)
}

// viaProxy points rc at the fault proxy at url: plain HTTP on loopback, no
// TLS settings, no credentials (the proxy holds the upstream's).
func viaProxy(rc *rest.Config, url string) *rest.Config {
	rc.Host = url
	rc.TLSClientConfig = rest.TLSClientConfig{}
	rc.BearerToken, rc.BearerTokenFile, rc.Username, rc.Password = "", "", "", ""
	rc.AuthProvider, rc.ExecProvider = nil, nil
	return rc
}
