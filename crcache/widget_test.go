package crcache

import (
	"encoding/json"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Widget is a Go type for apisim's custom resource, as a kubebuilder
// project would have for its own: registered in a scheme of its own, with
// no protobuf encoding.
type Widget struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              WidgetSpec     `json:"spec"`
	Status            map[string]any `json:"status,omitempty"`
}

// WidgetSpec is part of Widget.
type WidgetSpec struct {
	Size     int64                `json:"size"`
	Color    string               `json:"color"`
	Replicas int64                `json:"replicas"`
	Paused   bool                 `json:"paused"`
	Selector metav1.LabelSelector `json:"selector"`
	Ports    []WidgetPort         `json:"ports,omitempty"`
	Settings map[string]any       `json:"settings,omitempty"`
	Tags     []string             `json:"tags,omitempty"`
}

// WidgetPort is part of WidgetSpec.
type WidgetPort struct {
	Name     string `json:"name"`
	Port     int64  `json:"port"`
	Protocol string `json:"protocol"`
}

// WidgetList is a list of Widgets.
type WidgetList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Widget `json:"items"`
}

// deepCopy copies in into a new T by a JSON round trip (a test type's
// DeepCopy).
func deepCopy[T any](in *T) *T {
	b, err := json.Marshal(in)
	if err != nil {
		panic(err)
	}
	out := new(T)
	if err := json.Unmarshal(b, out); err != nil {
		panic(err)
	}
	return out
}

func (w *Widget) DeepCopyObject() runtime.Object     { return deepCopy(w) }
func (w *WidgetList) DeepCopyObject() runtime.Object { return deepCopy(w) }

// widgetScheme is client-go's scheme with Widget.
func widgetScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		panic(err)
	}
	s.AddKnownTypes(widgetGVK.GroupVersion(), &Widget{}, &WidgetList{})
	metav1.AddToGroupVersion(s, widgetGVK.GroupVersion())
	return s
}

func typedWidgets() kind {
	return kind{"typed Widget", func() client.Object { return &Widget{} }, func() client.ObjectList { return &WidgetList{} }}
}
