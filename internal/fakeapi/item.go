package fakeapi

import (
	"reflect"

	"k8s.io/apimachinery/pkg/runtime"
)

// newItem returns a new zero item of list's Items element type.
func newItem(list runtime.Object) runtime.Object {
	items := reflect.ValueOf(list).Elem().FieldByName("Items")
	t := items.Type().Elem()
	if t.Kind() == reflect.Pointer {
		return reflect.New(t.Elem()).Interface().(runtime.Object)
	}
	return reflect.New(t).Interface().(runtime.Object)
}
