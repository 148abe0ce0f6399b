package bench

import (
	"strconv"
	"strings"
	"sync"

	"github.com/shardinformer/shardinformer/apisim"
	corev1 "k8s.io/api/core/v1"
)

// podSet is a built set of pods with their keys, shared by every benchmark of
// a process that asks for the same size (building 100k pods takes seconds).
type podSet struct {
	pods []*corev1.Pod
	// keys are "ns/name", by index, laid out back to back in one string, so
	// that a producer walking them in order reads sequential memory.
	keys       []string
	namespaces []string
}

var podCache struct {
	sync.Mutex
	sets map[[2]int]*podSet
}

// Pods returns n pods spread round-robin over the given number of namespaces,
// built once per process. Pod i is "ns-<i mod namespaces>/pod-<i>".
func pods(n, namespaces int) *podSet {
	podCache.Lock()
	defer podCache.Unlock()
	if s := podCache.sets[[2]int{n, namespaces}]; s != nil {
		return s
	}
	s := &podSet{pods: make([]*corev1.Pod, n), keys: make([]string, n)}
	for i := range namespaces {
		s.namespaces = append(s.namespaces, "ns-"+strconv.Itoa(i))
	}
	var arena strings.Builder
	ends := make([]int, n)
	for i := range n {
		ns := s.namespaces[i%namespaces]
		name := "pod-" + strconv.Itoa(i)
		s.pods[i] = apisim.NewPod(ns, name, int64(i), apisim.PodOptions{})
		arena.WriteString(ns + "/" + name)
		ends[i] = arena.Len()
	}
	all, start := arena.String(), 0
	for i, end := range ends {
		s.keys[i], start = all[start:end], end
	}
	if podCache.sets == nil {
		podCache.sets = make(map[[2]int]*podSet)
	}
	podCache.sets[[2]int{n, namespaces}] = s
	return s
}
