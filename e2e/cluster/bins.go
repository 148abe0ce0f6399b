package cluster

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// ErrBinariesMissing is returned (wrapped) by FindBinaries and Start when
// bin/kube-apiserver or bin/etcd has not been built.
var ErrBinariesMissing = errors.New("cluster: kube-apiserver/etcd binaries missing (run hack/build-cluster-bins.sh or `make cluster-bins`)")

// BinDirEnv names the environment variable that overrides where the
// binaries are looked up.
const BinDirEnv = "SHARDINFORMER_BIN_DIR"

const rootModule = "github.com/shardinformer/shardinformer"

// Binaries are the paths of the two server executables.
type Binaries struct {
	KubeAPIServer string
	Etcd          string
}

// FindBinaries returns the server binaries in $SHARDINFORMER_BIN_DIR, or in
// bin/ of the repository root found by walking up from the working
// directory. The error wraps ErrBinariesMissing when either is absent.
func FindBinaries() (Binaries, error) {
	dir := os.Getenv(BinDirEnv)
	if dir == "" {
		root, err := repoRoot()
		if err != nil {
			return Binaries{}, fmt.Errorf("%w: %v", ErrBinariesMissing, err)
		}
		dir = filepath.Join(root, "bin")
	}
	b := Binaries{
		KubeAPIServer: filepath.Join(dir, "kube-apiserver"),
		Etcd:          filepath.Join(dir, "etcd"),
	}
	for _, p := range []string{b.KubeAPIServer, b.Etcd} {
		st, err := os.Stat(p)
		if err != nil {
			return b, fmt.Errorf("%w: %v", ErrBinariesMissing, err)
		}
		if st.IsDir() || st.Mode()&0o111 == 0 {
			return b, fmt.Errorf("%w: %s is not an executable file", ErrBinariesMissing, p)
		}
	}
	return b, nil
}

// repoRoot walks up from the working directory to the directory whose go.mod
// declares the library module.
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if modulePath(filepath.Join(dir, "go.mod")) == rootModule {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod of module %s above the working directory", rootModule)
		}
		dir = parent
	}
}

func modulePath(gomod string) string {
	f, err := os.Open(gomod)
	if err != nil {
		return ""
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		line := strings.TrimSpace(s.Text())
		if rest, ok := strings.CutPrefix(line, "module "); ok {
			return strings.Trim(strings.TrimSpace(rest), `"`)
		}
	}
	return ""
}
