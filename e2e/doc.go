// Package e2e holds the end-to-end suite that runs client-go's informer and
// shardinformer side by side against a real kube-apiserver and etcd
// (started by package e2e/cluster).
//
// The tests are behind the build tag e2e, so `go test ./...` does not run
// them:
//
//	hack/build-cluster-bins.sh            # once; builds bin/kube-apiserver and bin/etcd
//	go test -tags e2e -v -timeout 60m ./e2e/
//
// Without the binaries the suite skips, unless SHARDINFORMER_E2E_REQUIRE is
// set, in which case it fails. SHARDINFORMER_E2E_PODS sets the number of pods
// per churn (default 5000). The tag e2e_clientgo_only leaves shardinformer
// out (useful while the pipeline package does not build).
package e2e
