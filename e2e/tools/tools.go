//go:build tools

// Package tools pins the kube-apiserver used by the e2e suite. Nothing
// imports it; hack/build-cluster-bins.sh builds the main from here.
package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
)
