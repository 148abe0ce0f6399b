//go:build unix

package cluster

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"k8s.io/client-go/rest"
)

// Options configure Start. The zero value is valid.
type Options struct {
	// Binaries overrides FindBinaries.
	Binaries *Binaries
	// APIServerArgs are appended to the generated kube-apiserver flags
	// (a later flag wins), e.g. "--watch-cache=false" or
	// "--feature-gates=ShardedListAndWatch=true".
	APIServerArgs []string
	// EtcdArgs are appended to the generated etcd flags.
	EtcdArgs []string
	// Dir is the parent of the temporary directory ("" = os.TempDir()).
	Dir string
	// KeepDir leaves the temporary directory in place on Stop (for
	// debugging); processes are still stopped.
	KeepDir bool
	// ReadyTimeout bounds each wait for etcd or kube-apiserver to become
	// ready. Zero means 3 minutes (generous: the machines are shared).
	ReadyTimeout time.Duration
	// Logf receives progress messages; nil discards them.
	Logf func(format string, args ...any)
}

// Cluster is one running etcd + kube-apiserver pair. Create it with Start;
// always call Stop. Not copyable.
type Cluster struct {
	opts  Options
	dir   string
	creds credentials

	etcdClientURL string
	apiserverURL  string
	kubeconfig    string
	caPool        *x509.CertPool

	// mu serialises process control (start/stop/restart/compact/Stop).
	mu        sync.Mutex
	etcd      *process
	apiserver *process
	stopped   bool
}

// Start creates the temporary directory and credentials, starts etcd and
// kube-apiserver on free loopback ports and waits until kube-apiserver's
// /readyz answers. On error everything already started is stopped and the
// directory removed (the error includes the tail of the failing log).
func Start(ctx context.Context, opts Options) (c *Cluster, err error) {
	if opts.ReadyTimeout == 0 {
		opts.ReadyTimeout = 3 * time.Minute
	}
	if opts.Logf == nil {
		opts.Logf = func(string, ...any) {}
	}
	bins := opts.Binaries
	if bins == nil {
		b, err := FindBinaries()
		if err != nil {
			return nil, err
		}
		bins = &b
	}
	removeStaleDirs(opts.Dir, opts.Logf)
	dir, err := os.MkdirTemp(opts.Dir, dirPrefix)
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, ownerFile), []byte(strconv.Itoa(os.Getpid())), 0o600); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	c = &Cluster{opts: opts, dir: dir}
	defer func() {
		if err != nil {
			c.Stop()
		}
	}()
	if c.creds, err = writeCredentials(dir); err != nil {
		return nil, fmt.Errorf("cluster: generating credentials: %w", err)
	}
	c.caPool = x509.NewCertPool()
	c.caPool.AppendCertsFromPEM(c.creds.caPEM)

	ports, err := freePorts(3)
	if err != nil {
		return nil, err
	}
	etcdPort, peerPort, apiPort := ports[0], ports[1], ports[2]
	c.etcdClientURL = fmt.Sprintf("http://127.0.0.1:%d", etcdPort)
	peerURL := fmt.Sprintf("http://127.0.0.1:%d", peerPort)
	c.apiserverURL = fmt.Sprintf("https://127.0.0.1:%d", apiPort)

	c.etcd = &process{
		name:    "etcd",
		path:    bins.Etcd,
		logPath: filepath.Join(dir, "etcd.log"),
		args: append([]string{
			"--name=default",
			"--data-dir=" + filepath.Join(dir, "etcd-data"),
			"--listen-client-urls=" + c.etcdClientURL,
			"--advertise-client-urls=" + c.etcdClientURL,
			"--listen-peer-urls=" + peerURL,
			"--initial-advertise-peer-urls=" + peerURL,
			"--initial-cluster=default=" + peerURL,
			"--unsafe-no-fsync=true",           // test data only; fsync on a shared disk dominates latency
			"--quota-backend-bytes=8589934592", // room for 100k+ pods with history
			"--log-level=warn",
		}, opts.EtcdArgs...),
	}
	c.apiserver = &process{
		name:    "kube-apiserver",
		path:    bins.KubeAPIServer,
		logPath: filepath.Join(dir, "kube-apiserver.log"),
		args: append([]string{
			"--etcd-servers=" + c.etcdClientURL,
			"--bind-address=127.0.0.1",
			"--advertise-address=127.0.0.1",
			"--secure-port=" + strconv.Itoa(apiPort),
			"--tls-cert-file=" + c.creds.servingCrt,
			"--tls-private-key-file=" + c.creds.servingKey,
			"--cert-dir=" + filepath.Join(dir, "certs"),
			"--service-cluster-ip-range=10.0.0.0/24",
			"--authorization-mode=AlwaysAllow",
			"--token-auth-file=" + c.creds.tokenFile,
			"--service-account-issuer=https://127.0.0.1",
			"--service-account-key-file=" + c.creds.saPub,
			"--service-account-signing-key-file=" + c.creds.saKey,
			"--disable-admission-plugins=ServiceAccount",
			// The "kubernetes" service cannot point at a loopback address; skip
			// the reconciler instead of logging that every 10s.
			"--endpoint-reconciler-type=none",
		}, opts.APIServerArgs...),
	}
	if c.kubeconfig, err = c.writeKubeconfig(); err != nil {
		return nil, err
	}

	opts.Logf("cluster: dir %s, etcd %s, kube-apiserver %s", dir, c.etcdClientURL, c.apiserverURL)
	if err := c.StartEtcd(ctx); err != nil {
		return nil, err
	}
	if err := c.startAPIServer(ctx); err != nil {
		return nil, err
	}
	return c, nil
}

// Dir is the temporary directory holding data, credentials and logs.
func (c *Cluster) Dir() string { return c.dir }

// Kubeconfig is the path of a kubeconfig for the system:masters user.
func (c *Cluster) Kubeconfig() string { return c.kubeconfig }

// EtcdURL is etcd's client URL (plain HTTP on loopback).
func (c *Cluster) EtcdURL() string { return c.etcdClientURL }

// RESTConfig returns a fresh config for the system:masters user with client
// rate limiting disabled (QPS < 0). Callers may modify it.
func (c *Cluster) RESTConfig() *rest.Config {
	return &rest.Config{
		Host:        c.apiserverURL,
		BearerToken: c.creds.token,
		TLSClientConfig: rest.TLSClientConfig{
			CAData: append([]byte(nil), c.creds.caPEM...),
		},
		QPS:   -1,
		Burst: -1,
	}
}

// RestartAPIServer stops kube-apiserver (SIGTERM, then SIGKILL after 10s:
// open watches keep a graceful shutdown busy for longer) and starts it again
// on the same port, waiting for /readyz.
func (c *Cluster) RestartAPIServer(ctx context.Context) error {
	c.mu.Lock()
	c.apiserver.stop(10 * time.Second)
	c.mu.Unlock()
	c.opts.Logf("cluster: kube-apiserver stopped, starting again")
	return c.startAPIServer(ctx)
}

// StopAPIServer stops kube-apiserver; StartAPIServer starts it again.
func (c *Cluster) StopAPIServer() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.apiserver.stop(30 * time.Second)
}

// StartAPIServer starts a stopped kube-apiserver and waits for /readyz.
func (c *Cluster) StartAPIServer(ctx context.Context) error { return c.startAPIServer(ctx) }

// StopEtcd stops etcd (SIGTERM, SIGKILL after 10s). kube-apiserver keeps
// running and reports not ready until StartEtcd.
func (c *Cluster) StopEtcd() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.etcd.stop(10 * time.Second)
}

// StartEtcd starts etcd on its original ports and data directory and waits
// until /health reports healthy.
func (c *Cluster) StartEtcd(ctx context.Context) error {
	c.mu.Lock()
	if c.stopped {
		c.mu.Unlock()
		return errors.New("cluster: stopped")
	}
	err := c.etcd.start()
	c.mu.Unlock()
	if err != nil {
		return err
	}
	return c.waitReady(ctx, c.etcd, c.etcdClientURL+"/health", func(body []byte) bool {
		var h struct {
			Health string `json:"health"`
		}
		return json.Unmarshal(body, &h) == nil && h.Health == "true"
	})
}

func (c *Cluster) startAPIServer(ctx context.Context) error {
	c.mu.Lock()
	if c.stopped {
		c.mu.Unlock()
		return errors.New("cluster: stopped")
	}
	err := c.apiserver.start()
	c.mu.Unlock()
	if err != nil {
		return err
	}
	return c.waitReady(ctx, c.apiserver, c.apiserverURL+"/readyz", nil)
}

// Ready reports whether kube-apiserver's /readyz currently answers 200.
func (c *Cluster) Ready(ctx context.Context) bool {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	code, _, err := c.get(ctx, c.apiserverURL+"/readyz")
	return err == nil && code == http.StatusOK
}

// Compact compacts etcd's history at its current revision (physically), so
// that any watch or list at an older resourceVersion that reaches etcd fails
// with 410 Gone. It returns the revision compacted at.
func (c *Cluster) Compact(ctx context.Context) (int64, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var rng struct {
		Header struct {
			Revision string `json:"revision"`
		} `json:"header"`
	}
	// Any key will do: the response header carries the store's revision.
	if err := c.etcdPost(ctx, "/v3/kv/range", map[string]any{"key": "Lw==", "limit": 1, "keys_only": true}, &rng); err != nil {
		return 0, fmt.Errorf("cluster: reading etcd revision: %w", err)
	}
	rev, err := strconv.ParseInt(rng.Header.Revision, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("cluster: etcd revision %q: %w", rng.Header.Revision, err)
	}
	err = c.etcdPost(ctx, "/v3/kv/compaction", map[string]any{"revision": strconv.FormatInt(rev, 10), "physical": true}, nil)
	if err != nil && !strings.Contains(err.Error(), "required revision has been compacted") {
		return 0, fmt.Errorf("cluster: compacting etcd at %d: %w", rev, err)
	}
	c.opts.Logf("cluster: etcd compacted at revision %d", rev)
	return rev, nil
}

// Logs returns the tail (up to n bytes each) of both processes' logs.
func (c *Cluster) Logs(n int64) string {
	var b strings.Builder
	for _, p := range []*process{c.etcd, c.apiserver} {
		if p == nil {
			continue
		}
		fmt.Fprintf(&b, "===== %s (%s) =====\n%s\n", p.name, p.logPath, p.tail(n))
	}
	return b.String()
}

// Stop kills both processes and removes the temporary directory (unless
// Options.KeepDir). Safe to call more than once.
func (c *Cluster) Stop() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopped {
		return
	}
	c.stopped = true
	if c.apiserver != nil {
		c.apiserver.stop(10 * time.Second)
	}
	if c.etcd != nil {
		c.etcd.stop(10 * time.Second)
	}
	if c.opts.KeepDir {
		c.opts.Logf("cluster: kept %s", c.dir)
		return
	}
	if err := os.RemoveAll(c.dir); err != nil {
		c.opts.Logf("cluster: removing %s: %v", c.dir, err)
	}
}

// waitReady polls url until it answers 200 (and ok accepts the body, if
// set), the process exits, ctx ends, or ReadyTimeout passes.
func (c *Cluster) waitReady(ctx context.Context, p *process, url string, ok func([]byte) bool) error {
	ctx, cancel := context.WithTimeout(ctx, c.opts.ReadyTimeout)
	defer cancel()
	start := time.Now()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	var last string
	for {
		code, body, err := c.get(ctx, url)
		switch {
		case err != nil:
			last = err.Error()
		case code == http.StatusOK && (ok == nil || ok(body)):
			c.opts.Logf("cluster: %s ready after %v", p.name, time.Since(start).Round(time.Millisecond))
			return nil
		default:
			last = fmt.Sprintf("HTTP %d: %.300s", code, body)
		}
		select {
		case <-p.exited():
			return fmt.Errorf("cluster: %s exited before becoming ready (%v); log tail:\n%s", p.name, p.err, p.tail(8<<10))
		case <-ctx.Done():
			return fmt.Errorf("cluster: %s not ready at %s (%v; last: %s); log tail:\n%s", p.name, url, ctx.Err(), last, p.tail(8<<10))
		case <-tick.C:
		}
	}
}

func (c *Cluster) httpClient() *http.Client {
	return &http.Client{
		Timeout: 10 * time.Second,
		Transport: &http.Transport{
			TLSClientConfig:   &tls.Config{RootCAs: c.caPool},
			DisableKeepAlives: true,
		},
	}
}

func (c *Cluster) get(ctx context.Context, url string) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, nil, err
	}
	if strings.HasPrefix(url, "https:") {
		req.Header.Set("Authorization", "Bearer "+c.creds.token)
	}
	resp, err := c.httpClient().Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	return resp.StatusCode, body, err
}

// etcdPost calls etcd's JSON gRPC gateway.
func (c *Cluster) etcdPost(ctx context.Context, path string, in, out any) error {
	body, err := json.Marshal(in)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.etcdClientURL+path, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.httpClient().Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	respBody, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("etcd %s: HTTP %d: %s", path, resp.StatusCode, respBody)
	}
	if out != nil {
		return json.Unmarshal(respBody, out)
	}
	return nil
}

func (c *Cluster) writeKubeconfig() (string, error) {
	// Written by hand to keep clientcmd's dependencies out of the harness.
	kc := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: shardinformer-e2e
  cluster:
    server: %s
    certificate-authority-data: %s
users:
- name: admin
  user:
    token: %s
contexts:
- name: shardinformer-e2e
  context:
    cluster: shardinformer-e2e
    user: admin
current-context: shardinformer-e2e
`, c.apiserverURL, base64Std(c.creds.caPEM), c.creds.token)
	path := filepath.Join(c.dir, "kubeconfig")
	return path, os.WriteFile(path, []byte(kc), 0o600)
}

// freePorts reserves n distinct free loopback ports. They are released before
// the servers bind them, so another process could take one in between; the
// window is short and the failure is loud (the server exits).
func freePorts(n int) ([]int, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	ports := make([]int, 0, n)
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("cluster: reserving a port: %w", err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

const (
	dirPrefix = "shardinformer-cluster-"
	ownerFile = "owner.pid"
)

// removeStaleDirs removes cluster directories left behind by a process that
// died without calling Stop (a test binary killed by -timeout cannot run its
// cleanups; its servers die with it through Pdeathsig). Directories whose
// owner is still alive are left alone: other tests may be using them.
func removeStaleDirs(parent string, logf func(string, ...any)) {
	if parent == "" {
		parent = os.TempDir()
	}
	dirs, _ := filepath.Glob(filepath.Join(parent, dirPrefix+"*"))
	for _, d := range dirs {
		b, err := os.ReadFile(filepath.Join(d, ownerFile))
		if err != nil {
			continue
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil || pid <= 0 || processAlive(pid) {
			continue
		}
		if err := os.RemoveAll(d); err == nil {
			logf("cluster: removed stale %s (owner pid %d is gone)", d, pid)
		}
	}
}
