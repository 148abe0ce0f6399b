package pipeline

import (
	"fmt"

	"github.com/shardinformer/shardinformer/internal/fakeapi"
	"github.com/shardinformer/shardinformer/internal/testkit"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"
)

func newCluster(watchList bool) *fakeapi.Cluster {
	return fakeapi.New(fakeapi.Config{
		NewList:   func() runtime.Object { return &corev1.ConfigMapList{} },
		WatchList: watchList,
		DeepCopy:  true,
	})
}

func configMap(ns, name, value string) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"v": value}},
		Data:       map[string]string{"v": value},
	}
}

// newRecorder returns a recording handler that labels objects by their data
// value (value).
func newRecorder() *testkit.Recorder { return &testkit.Recorder{Label: value} }

func value(obj any) string {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		if t.Obj == nil {
			return "?"
		}
		obj = t.Obj
	}
	return obj.(*corev1.ConfigMap).Data["v"]
}

func keyOf(obj any) string {
	k, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
	if err != nil {
		panic(err)
	}
	return k
}

func names(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("cm-%03d", i)
	}
	return out
}
