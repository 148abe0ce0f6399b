// Package cluster starts a real etcd and kube-apiserver on loopback ports for
// end-to-end tests and for `make cluster`.
//
// A Cluster owns one temporary directory holding etcd's data, the generated
// serving certificate, service-account keys, token file, kubeconfig and the
// log files of both processes. Stop kills both processes and removes the
// directory; it is safe to call more than once and after a failed Start.
//
// The binaries are the ones hack/build-cluster-bins.sh builds into the repo
// root's bin/ (kube-apiserver v1.36.3, etcd v3.6.5); FindBinaries locates
// them and reports ErrBinariesMissing when they have not been built.
//
// The package imports only the standard library and client-go, so the
// library module gains no dependency on etcd or Kubernetes server code:
// etcd compaction goes through etcd's JSON gateway (/v3/kv/compaction).
//
// Usage:
//
//	c, err := cluster.Start(ctx, cluster.Options{})
//	if err != nil { ... }
//	defer c.Stop()
//	client := kubernetes.NewForConfigOrDie(c.RESTConfig())
//
// Concurrency: the fault methods (RestartAPIServer, StopEtcd, StartEtcd,
// Compact) and Stop may be called from any goroutine; the process-control
// methods serialise on one mutex. RESTConfig and Kubeconfig are immutable
// after Start: a restarted kube-apiserver keeps its port and credentials.
package cluster
