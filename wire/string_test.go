package wire_test

import (
	"testing"

	"github.com/shardinformer/shardinformer/wire"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
)

func TestString(t *testing.T) {
	for _, c := range []struct {
		opts []wire.Option
		want string
	}{
		{nil, "wire pods.v1 in shop: protobuf, 2 workers"},
		{[]wire.Option{wire.WithDiet()}, "wire pods.v1 in shop: protobuf, 2 workers, diet (managedFields dropped, interned, compacted, shared)"},
		{[]wire.Option{wire.WithContentType(wire.JSON), wire.WithSharedValues()}, "wire pods.v1 in shop: json, 2 workers, diet (shared with maps)"},
	} {
		lw, err := wire.NewForConfig(&rest.Config{Host: "http://127.0.0.1:1"}, wire.Resource{GVR: podsGVR, Namespace: "shop", Object: &corev1.Pod{}},
			append([]wire.Option{wire.WithWorkers(2)}, c.opts...)...)
		if err != nil {
			t.Fatal(err)
		}
		if got := lw.String(); got != c.want {
			t.Errorf("String() = %q, want %q", got, c.want)
		}
	}
}
