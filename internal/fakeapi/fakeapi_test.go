package fakeapi

import (
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
)

func newTestCluster() *Cluster {
	return New(Config{NewList: func() runtime.Object { return &corev1.ConfigMapList{} }})
}

func cm(ns, name, v string) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Data:       map[string]string{"v": v},
	}
}

// watchNow opens a watch from the current resourceVersion.
func watchNow(t *testing.T, c *Cluster) watch.Interface {
	t.Helper()
	w, err := c.ListerWatcher().Watch(metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
	return w
}

// TestUpdateKeyed checks that UpdateKeyed does what Update does: the same
// error for a missing key, and otherwise the same store contents, event and
// resourceVersion.
func TestUpdateKeyed(t *testing.T) {
	c := newTestCluster()
	if _, err := c.UpdateKeyed("ns/a", cm("ns", "a", "0")); err == nil || !strings.Contains(err.Error(), "not found") {
		t.Fatalf("UpdateKeyed of a missing object: err = %v, want not found", err)
	}
	if rv := c.ResourceVersion(); rv != 1 {
		t.Fatalf("failed UpdateKeyed moved the resourceVersion to %d", rv)
	}
	if _, err := c.Create(cm("ns", "a", "1")); err != nil {
		t.Fatal(err)
	}
	w := watchNow(t, c)

	for i, update := range []func(runtime.Object) (runtime.Object, error){
		c.Update,
		func(o runtime.Object) (runtime.Object, error) { return c.UpdateKeyed("ns/a", o) },
	} {
		obj := cm("ns", "a", strconv.Itoa(2+i))
		got, err := update(obj)
		if err != nil {
			t.Fatal(err)
		}
		rv := c.ResourceVersion()
		if m := got.(*corev1.ConfigMap); m.ResourceVersion != strconv.FormatUint(rv, 10) || m.Data["v"] != obj.Data["v"] {
			t.Errorf("update %d returned rv %q data %v, want rv %d data %v", i, m.ResourceVersion, m.Data, rv, obj.Data)
		}
		if stored := c.Objects()["ns/a"]; stored != got {
			t.Errorf("update %d: store holds %v, want the returned object", i, stored)
		}
		e := <-w.ResultChan()
		if e.Type != watch.Modified || e.Object != got {
			t.Errorf("update %d: watch got %v %v, want Modified of the returned object", i, e.Type, e.Object)
		}
	}
}

// TestUpdateKeyedWrongKey checks that race and invariants builds catch a
// caller passing a key that is not the object's.
func TestUpdateKeyedWrongKey(t *testing.T) {
	if !invariants {
		t.Skip("the key is checked only in race and invariants builds")
	}
	c := newTestCluster()
	for _, o := range []*corev1.ConfigMap{cm("ns", "a", "1"), cm("ns", "b", "1")} {
		if _, err := c.Create(o); err != nil {
			t.Fatal(err)
		}
	}
	defer func() {
		if recover() == nil {
			t.Error("UpdateKeyed with another object's key did not panic")
		}
	}()
	c.UpdateKeyed("ns/a", cm("ns", "b", "2"))
}

func TestBacklog(t *testing.T) {
	c := newTestCluster()
	if _, err := c.Create(cm("ns", "a", "0")); err != nil {
		t.Fatal(err)
	}
	if n := c.Backlog(); n != 0 {
		t.Fatalf("Backlog without watches = %d, want 0", n)
	}
	w1, w2 := watchNow(t, c), watchNow(t, c)
	for i := range 3 {
		if _, err := c.UpdateKeyed("ns/a", cm("ns", "a", strconv.Itoa(1+i))); err != nil {
			t.Fatal(err)
		}
	}
	if n := c.Backlog(); n != 3 {
		t.Fatalf("Backlog after 3 unread events = %d, want 3", n)
	}
	<-w1.ResultChan()
	<-w2.ResultChan()
	<-w2.ResultChan()
	if n := c.Backlog(); n != 2 {
		t.Fatalf("Backlog with 2 and 1 unread = %d, want the longest, 2", n)
	}
	w1.Stop()
	if n := c.Backlog(); n != 1 {
		t.Fatalf("Backlog after stopping the longer watch = %d, want 1", n)
	}
}
