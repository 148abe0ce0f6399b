//go:build tools

// Package tools pins the etcd server used by the e2e suite. Nothing imports
// it; hack/build-cluster-bins.sh builds the main from here.
package tools

import (
	_ "go.etcd.io/etcd/server/v3"
)
