package testkit

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"regexp"
	"testing"
	"time"
)

// childRole is the environment variable that tells a test it runs as
// RunChild's child and in which role.
const childRole = "SHARDINFORMER_TEST_CHILD"

// ChildRole is the role RunChild gave this process, "" in the parent. A
// test that uses RunChild starts with
//
//	if role := testkit.ChildRole(); role != "" { child(role); return }
func ChildRole() string { return os.Getenv(childRole) }

// RunChild runs the calling top-level test again in a child process of the
// test binary, with ChildRole returning role and env (KEY=value) added to
// its environment, and returns what it printed and whether it exited with
// status 0. It is for behaviour that ends a process (a panic on another
// goroutine) or is fixed at package initialization (client-go reads
// KUBE_CACHE_MUTATION_DETECTOR once). The child is killed after a minute.
func RunChild(t *testing.T, role string, env ...string) (output string, ok bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^"+regexp.QuoteMeta(t.Name())+"$", "-test.count=1", "-test.v")
	cmd.Env = append(append(os.Environ(), childRole+"="+role), env...)
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatalf("child %s: %v", role, err)
	}
	if ctx.Err() != nil {
		t.Fatalf("child %s did not end within a minute:\n%s", role, out)
	}
	return string(out), err == nil
}
