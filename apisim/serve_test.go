package apisim_test

import (
	"context"
	"strings"
	"testing"

	"github.com/shardinformer/shardinformer/apisim"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
)

// Serve creates every object through its resource's API, in order, and
// serves them; an object of a type it does not serve, or one the API
// refuses, is an error naming it, and nothing is left listening.
func TestServe(t *testing.T) {
	s, err := apisim.Serve(apisim.Config{},
		apisim.NewPod("shop", "web-0", 1, apisim.PodOptions{}),
		apisim.NewConfigMap("shop", "settings", 2),
		apisim.NewWidget("shop", "gizmo", 3),
		apisim.NewPod("shop", "web-1", 4, apisim.PodOptions{}))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	cs, err := kubernetes.NewForConfig(s.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	pods, err := cs.CoreV1().Pods("shop").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(pods.Items) != 2 || pods.Items[0].ResourceVersion == pods.Items[1].ResourceVersion {
		t.Errorf("pods: %d with resourceVersions %v; want 2, each its own", len(pods.Items), rvs(pods.Items))
	}
	if got := len(s.ConfigMaps().List("")) + len(s.Widgets().List("")); got != 2 {
		t.Errorf("config maps and widgets: %d, want 2", got)
	}

	for _, tc := range []struct {
		name string
		objs []runtime.Object
		want string
	}{
		{"unserved type", []runtime.Object{&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "b"}}}, "object 0 (*v1.Secret): no resource of this type"},
		{"refused by the API", []runtime.Object{apisim.NewPod("a", "p", 1, apisim.PodOptions{}), apisim.NewPod("a", "p", 2, apisim.PodOptions{})}, "object 1 (*v1.Pod)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := apisim.Serve(apisim.Config{}, tc.objs...)
			if err == nil {
				s.Close()
				t.Fatal("Serve succeeded")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q, want it to contain %q", err, tc.want)
			}
		})
	}
}

func rvs(pods []corev1.Pod) []string {
	out := make([]string, len(pods))
	for i := range pods {
		out[i] = pods[i].ResourceVersion
	}
	return out
}
