package apisim

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// Serve is the set-up of an example or a test in one call: New(cfg), a
// Create of each of objs in order (pods, config maps, deployments and
// widgets — *unstructured.Unstructured — each through its API, so every
// object gets its own resourceVersion and watch event), then Start. On an
// error nothing is left running and the error names the object. The caller
// closes the server.
func Serve(cfg Config, objs ...runtime.Object) (*Server, error) {
	s, err := New(cfg)
	if err != nil {
		return nil, err
	}
	for i, obj := range objs {
		if err := s.createAny(obj); err != nil {
			_ = s.Close()
			return nil, fmt.Errorf("apisim: Serve: object %d (%T): %w", i, obj, err)
		}
	}
	if err := s.Start(); err != nil {
		_ = s.Close()
		return nil, err
	}
	return s, nil
}

// createAny creates obj through the API of its type.
func (s *Server) createAny(obj runtime.Object) error {
	var err error
	switch o := obj.(type) {
	case *corev1.Pod:
		_, err = s.Pods().Create(o)
	case *corev1.ConfigMap:
		_, err = s.ConfigMaps().Create(o)
	case *appsv1.Deployment:
		_, err = s.Deployments().Create(o)
	case *unstructured.Unstructured:
		_, err = s.Widgets().Create(o)
	default:
		err = fmt.Errorf("no resource of this type is served (pods, configmaps, deployments, widgets)")
	}
	return err
}
