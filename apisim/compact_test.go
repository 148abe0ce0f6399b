package apisim

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/shardinformer/shardinformer/apisim/internal/pbscan"
)

// TestCompactStorage: with EncodedOnly the replicas of a template are
// stored as small deltas and decoded forms are dropped at once, by every
// kind of write.
func TestCompactStorage(t *testing.T) {
	s, err := New(Config{EncodedOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	var pods []*corev1.Pod
	for i := range 400 {
		pods = append(pods, NewPod(fmt.Sprintf("ns-%d", i%2), fmt.Sprintf("pod-%04d", i), int64(i), PodOptions{Apps: 4}))
	}
	if err := s.Load(pods); err != nil {
		t.Fatal(err)
	}
	p := NewPod("ns-0", "created", 1000, PodOptions{Apps: 4})
	if _, err := s.Create(p); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Modify("ns-0", "pod-0000", func(p *corev1.Pod) { p.Annotations["x"] = "y" }); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Delete("ns-1", "pod-0001"); err != nil {
		t.Fatal(err)
	}
	var raw, stored, decoded, deltas, n int
	s.st.cur.Load().tree.Ascend("", func(_ string, o *object) bool {
		b := o.enc[encProtobuf].Load()
		if b == nil {
			t.Fatalf("%s@%d has no protobuf encoding after its write", o.key, o.rv)
		}
		if o.dec.Load() != nil {
			decoded++
		}
		if b.ref != nil {
			deltas++
		}
		raw += b.len()
		stored += len(b.data)
		n++
		return true
	})
	if ev := s.st.eventAt(s.ResourceVersion()); ev.obj.enc[encProtobuf].Load() == nil || ev.obj.dec.Load() != nil {
		t.Error("the deletion's final state is not settled")
	}
	if decoded != 0 || deltas != n {
		t.Errorf("%d of %d versions decoded, %d stored as deltas; want 0 and all", decoded, n, deltas)
	}
	// 8 templates (4 apps × 2 namespaces) of ≈5.5 KB, ≈50 replicas each.
	if stored*5 > raw {
		t.Errorf("%d pods: %d bytes stored for %d bytes of protobuf, want at most a fifth", n, stored, raw)
	}
	t.Logf("%d pods: %d bytes stored for %d bytes of protobuf (%.0f per pod)", n, stored, raw, float64(stored)/float64(n))
}

// TestCompactDifferential drives the same random writes into a server with
// EncodedOnly (compact versions: deltas against shared references,
// interned labels, eager protobuf) and one without (today's form: decoded
// versions, whole encodings) with the same uids, and checks that every
// response — lists whole and paged, at resourceVersion 0 and exact past
// ones, with selectors, in JSON and protobuf, whole objects and
// PartialObjectMetadata; gets; watches from past resourceVersions, from
// "", WatchList up to its initial-events-end bookmark; 410s after
// compaction — is byte for byte the same, and so are the in-process reads.
func TestCompactDifferential(t *testing.T) {
	cfg := Config{History: 60, BookmarkInterval: -1, ListSnapshots: 4, ResourceVersionWait: 10 * time.Millisecond}
	ref := startServer(t, cfg)
	cfg.EncodedOnly = true
	cmp := startServer(t, cfg)
	for _, s := range []*Server{ref, cmp} {
		var n atomic.Uint64
		s.st.newUID = func() types.UID { return types.UID(fmt.Sprintf("00000000-0000-4000-8000-%012d", n.Add(1))) }
	}
	r := rand.New(rand.NewPCG(11, 12))
	created := metav1.NewTime(time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC))
	var podKeys, widgetKeys []string
	podEvents := map[uint64]bool{} // resourceVersions of pod events
	both := func(f func(s *Server) (uint64, error)) {
		t.Helper()
		var rvs [2]uint64
		for i, s := range []*Server{ref, cmp} {
			rv, err := f(s)
			if err != nil {
				t.Fatal(err)
			}
			rvs[i] = rv
		}
		if rvs[0] != rvs[1] {
			t.Fatalf("the servers' writes made resourceVersions %d and %d", rvs[0], rvs[1])
		}
	}
	newPod := func(ns, name string) *corev1.Pod {
		p := NewPod(ns, name, r.Int64(), PodOptions{Apps: 3, Nodes: 4, ManagedFields: r.IntN(3) == 0})
		p.CreationTimestamp = created
		return p
	}
	pick := func(keys []string) (string, string, int) {
		i := r.IntN(len(keys))
		ns, name := splitKey(keys[i])
		return ns, name, i
	}
	var initial []*corev1.Pod
	for i := range 40 {
		initial = append(initial, newPod(fmt.Sprintf("ns-%d", i%3), fmt.Sprintf("pod-%03d", i)))
		podKeys = append(podKeys, initial[i].Namespace+"/"+initial[i].Name)
	}
	both(func(s *Server) (uint64, error) {
		pods := make([]*corev1.Pod, len(initial))
		for i, p := range initial {
			pods[i] = p.DeepCopy()
		}
		return s.ResourceVersion(), s.Load(pods)
	})
	for rv := uint64(initialRV + 1); rv <= ref.ResourceVersion(); rv++ {
		podEvents[rv] = true
	}

	for step := range 400 {
		switch op := r.IntN(20); {
		case op < 3: // create a pod
			p := newPod(fmt.Sprintf("ns-%d", r.IntN(3)), fmt.Sprintf("new-%03d", step))
			both(func(s *Server) (uint64, error) { _, err := s.Create(p); return s.ResourceVersion(), err })
			podKeys = append(podKeys, p.Namespace+"/"+p.Name)
			podEvents[ref.ResourceVersion()] = true
		case op < 9 && len(podKeys) > 0: // modify: annotations, labels, spec, status
			ns, name, _ := pick(podKeys)
			k, v := strconv.Itoa(r.IntN(5)), strconv.Itoa(step)
			what := r.IntN(4)
			both(func(s *Server) (uint64, error) {
				return s.Modify(ns, name, func(p *corev1.Pod) {
					switch what {
					case 0:
						p.Annotations["a"+k] = v
					case 1:
						p.Labels["l"+k] = v
					case 2:
						p.Spec.NodeName = "node-000" + k
					default:
						p.Status.Phase = corev1.PodPhase("Phase" + k)
					}
				})
			})
			podEvents[ref.ResourceVersion()] = true
		case op < 11 && len(podKeys) > 0: // update to another template's content
			ns, name, _ := pick(podKeys)
			p := newPod(ns, name)
			both(func(s *Server) (uint64, error) { _, err := s.Update(p); return s.ResourceVersion(), err })
			podEvents[ref.ResourceVersion()] = true
		case op < 13 && len(podKeys) > 0:
			ns, name, i := pick(podKeys)
			both(func(s *Server) (uint64, error) { _, err := s.Delete(ns, name); return s.ResourceVersion(), err })
			podKeys = append(podKeys[:i], podKeys[i+1:]...)
			podEvents[ref.ResourceVersion()] = true
		case op < 15: // widgets: JSON only, other events in the shared history
			if len(widgetKeys) == 0 || r.IntN(2) == 0 {
				w := NewWidget("ns-0", fmt.Sprintf("w-%03d", step), int64(step))
				w.SetCreationTimestamp(created)
				both(func(s *Server) (uint64, error) {
					_, err := s.Widgets().Create(w)
					return s.ResourceVersion(), err
				})
				widgetKeys = append(widgetKeys, "ns-0/"+w.GetName())
			} else {
				ns, name, _ := pick(widgetKeys)
				both(func(s *Server) (uint64, error) {
					return s.Widgets().Modify(ns, name, func(u *unstructured.Unstructured) {
						_ = unstructured.SetNestedField(u.Object, int64(step), "spec", "size")
					})
				})
			}
		case op == 15 && r.IntN(4) == 0:
			rv := ref.ResourceVersion() - uint64(r.IntN(20))
			both(func(s *Server) (uint64, error) { s.Compact(rv); return s.ResourceVersion(), nil })
		default:
			compareReads(t, r, ref, cmp, podEvents, len(podKeys))
		}
	}
	compareReads(t, r, ref, cmp, podEvents, len(podKeys))
	if a, b := ref.List(""), cmp.List(""); !equality.Semantic.DeepEqual(a, b) {
		t.Error("in-process List differs")
	}
	for _, ns := range []string{"", "ns-1"} {
		want := map[string]string{}
		for _, p := range ref.List(ns) {
			want[p.Namespace+"/"+p.Name] = p.ResourceVersion
		}
		for _, s := range []*Server{ref, cmp} {
			if got := s.Pods().ResourceVersions(ns); !equality.Semantic.DeepEqual(got, want) {
				t.Errorf("ResourceVersions(%q): %d entries, List has %d: %v", ns, len(got), len(want), got)
			}
		}
	}
	if got := cmp.Widgets().ResourceVersions(""); len(got) != len(widgetKeys) {
		t.Errorf("widgets' ResourceVersions: %d entries, want %d", len(got), len(widgetKeys))
	}
	for _, k := range podKeys {
		ns, name := splitKey(k)
		a, _ := ref.Get(ns, name)
		b, _ := cmp.Get(ns, name)
		if !equality.Semantic.DeepEqual(a, b) {
			t.Errorf("Get %s differs", k)
		}
	}
}

var compactAccepts = []string{
	ContentTypeJSON,
	ContentTypeProtobuf,
	"application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1",
	"application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1",
	"application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1beta1",
}

var compactWatchAccepts = []string{
	ContentTypeJSON,
	ContentTypeProtobuf,
	"application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1",
	"application/vnd.kubernetes.protobuf;as=PartialObjectMetadata;g=meta.k8s.io;v=v1",
}

// compareReads makes a few random reads of both servers and fails if any
// response differs.
func compareReads(t *testing.T, r *rand.Rand, ref, cmp *Server, podEvents map[uint64]bool, pods int) {
	t.Helper()
	cur := ref.ResourceVersion()
	past := cur - uint64(r.IntN(int(min(cur-initialRV, 80))+1))
	for range 3 {
		q := url.Values{}
		switch r.IntN(7) {
		case 0:
			q.Set("limit", strconv.Itoa(1+r.IntN(15)))
		case 1:
			q.Set("resourceVersion", "0")
		case 2:
			q.Set("resourceVersion", strconv.FormatUint(past, 10))
			q.Set("resourceVersionMatch", "Exact")
		case 3:
			q.Set("labelSelector", []string{"", "!"}[r.IntN(2)]+"l"+strconv.Itoa(r.IntN(5)))
		case 4:
			q.Set("fieldSelector", "spec.nodeName=node-000"+strconv.Itoa(r.IntN(4)))
		case 5:
			q.Set("resourceVersion", strconv.FormatUint(past, 10))
			q.Set("limit", strconv.Itoa(1+r.IntN(15)))
		}
		accept := compactAccepts[r.IntN(len(compactAccepts))]
		ns := []string{"", "ns-1"}[r.IntN(2)]
		for page := 0; ; page++ {
			a, sa := fetchBoth(t, ref, cmp, podsPath(ns)+"?"+q.Encode(), accept)
			if sa != http.StatusOK {
				break
			}
			tok := continueOf(t, a, accept)
			if tok == "" || page > 60 {
				break
			}
			q.Del("resourceVersion")
			q.Set("continue", tok)
		}
	}
	for range 2 { // GET
		p := ref.List("")
		if len(p) == 0 {
			break
		}
		o := p[r.IntN(len(p))]
		accept := compactWatchAccepts[r.IntN(len(compactWatchAccepts))]
		fetchBoth(t, ref, cmp, "/api/v1/namespaces/"+o.Namespace+"/pods/"+o.Name, accept)
	}
	// A watch from a past resourceVersion: every pod event after it, or
	// one ERROR if history no longer has them.
	from := past - 1
	frames := 1
	if from >= ref.st.minRV.Load() {
		frames = 0
		for rv := from + 1; rv <= cur; rv++ {
			if podEvents[rv] {
				frames++
			}
		}
	}
	accept := compactWatchAccepts[r.IntN(len(compactWatchAccepts))]
	if frames > 0 {
		watchBoth(t, ref, cmp, url.Values{"watch": {"1"}, "resourceVersion": {strconv.FormatUint(from, 10)}}, accept, frames)
	}
	// From "": the current pods as ADDED; WatchList: and the bookmark.
	if pods > 0 {
		watchBoth(t, ref, cmp, url.Values{"watch": {"1"}}, accept, pods)
	}
	watchBoth(t, ref, cmp, url.Values{"watch": {"1"}, "sendInitialEvents": {"true"}, "allowWatchBookmarks": {"true"},
		"resourceVersionMatch": {"NotOlderThan"}}, accept, pods+1)
}

func podsPath(ns string) string {
	if ns == "" {
		return "/api/v1/pods"
	}
	return "/api/v1/namespaces/" + ns + "/pods"
}

// fetchBoth GETs path from both servers and fails unless status and body
// are the same; it returns the body and status.
func fetchBoth(t *testing.T, ref, cmp *Server, path, accept string) ([]byte, int) {
	t.Helper()
	var bodies [2][]byte
	var codes [2]int
	for i, s := range []*Server{ref, cmp} {
		req, _ := http.NewRequest(http.MethodGet, s.URL()+path, nil)
		req.Header.Set("Accept", accept)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		bodies[i], err = io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		codes[i] = resp.StatusCode
	}
	if codes[0] != codes[1] || !bytes.Equal(bodies[0], bodies[1]) {
		t.Fatalf("GET %s (Accept %s): today's server %d, %d bytes; compact %d, %d bytes; first difference at %d",
			path, accept, codes[0], len(bodies[0]), codes[1], len(bodies[1]), commonPrefix(bodies[0], bodies[1]))
	}
	return bodies[0], codes[0]
}

// continueOf returns a list response's continue token.
func continueOf(t *testing.T, body []byte, accept string) string {
	t.Helper()
	if bytes.HasPrefix(body, protoMagic) {
		raw, ok := pbscan.Field(body[len(protoMagic):], 2)
		metaField := uint64(1)
		if bytes.Contains([]byte(accept), []byte("v1beta1")) {
			metaField = 2
		}
		lm, ok2 := pbscan.Field(raw, metaField)
		var m metav1.ListMeta
		if !ok || !ok2 || m.Unmarshal(lm) != nil {
			t.Fatalf("list response does not parse")
		}
		return m.Continue
	}
	var l struct {
		Metadata metav1.ListMeta `json:"metadata"`
	}
	if err := json.Unmarshal(body, &l); err != nil {
		t.Fatal(err)
	}
	return l.Metadata.Continue
}

// watchBoth watches pods on both servers with q and fails unless their
// first frames are byte for byte the same.
func watchBoth(t *testing.T, ref, cmp *Server, q url.Values, accept string, frames int) {
	t.Helper()
	var got [2][][]byte
	for i, s := range []*Server{ref, cmp} {
		req, _ := http.NewRequest(http.MethodGet, s.URL()+"/api/v1/pods?"+q.Encode(), nil)
		req.Header.Set("Accept", accept)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		br := bufio.NewReader(resp.Body)
		for range frames {
			f, err := readFrame(br, resp.Header.Get("Content-Type") != ContentTypeJSON)
			if err != nil {
				resp.Body.Close()
				t.Fatalf("watch %s (Accept %s): frame %d of %d: %v", q.Encode(), accept, len(got[i]), frames, err)
			}
			got[i] = append(got[i], f)
		}
		resp.Body.Close()
	}
	for j := range got[0] {
		if !bytes.Equal(got[0][j], got[1][j]) {
			t.Fatalf("watch %s (Accept %s): frame %d differs: %.200q vs %.200q", q.Encode(), accept, j, got[0][j], got[1][j])
		}
	}
}

func readFrame(br *bufio.Reader, proto bool) ([]byte, error) {
	if !proto {
		return br.ReadBytes('\n')
	}
	var hdr [4]byte
	if _, err := io.ReadFull(br, hdr[:]); err != nil {
		return nil, err
	}
	b := make([]byte, binary.BigEndian.Uint32(hdr[:]))
	_, err := io.ReadFull(br, b)
	return b, err
}

// TestLoadBatches: Load publishes in batches, yet every object is its own
// event with its own resourceVersion, in order; lists at a resourceVersion
// inside a batch see exactly the objects before it; a failing object stops
// the load after the ones before it.
func TestLoadBatches(t *testing.T) {
	ctx := context.Background()
	for _, encodedOnly := range []bool{false, true} {
		t.Run(fmt.Sprintf("encodedOnly=%v", encodedOnly), func(t *testing.T) {
			s := startServer(t, Config{EncodedOnly: encodedOnly})
			cs := clientFor(t, s, ContentTypeProtobuf)
			w, err := cs.CoreV1().Pods("").Watch(ctx, metav1.ListOptions{ResourceVersion: strconv.Itoa(initialRV)})
			if err != nil {
				t.Fatal(err)
			}
			defer w.Stop()
			const n = 2*loadBatch + 300
			pods := make([]*corev1.Pod, n+10)
			for i := range pods {
				pods[i] = NewPod(fmt.Sprintf("ns-%d", i%3), fmt.Sprintf("pod-%05d", i), int64(i), PodOptions{Apps: 4})
			}
			pods[n] = NewPod("ns-1", "pod-00007", 1, PodOptions{}) // exists: the load stops here
			err = s.Load(pods)
			if !apierrors.IsAlreadyExists(err) {
				t.Fatalf("Load with a duplicate: %v, want AlreadyExists", err)
			}
			if s.Len() != n || s.ResourceVersion() != initialRV+n {
				t.Fatalf("after the failed load: %d pods at RV %d, want %d at %d", s.Len(), s.ResourceVersion(), n, initialRV+n)
			}
			for i := range n {
				ev := <-w.ResultChan()
				p, ok := ev.Object.(*corev1.Pod)
				if !ok || ev.Type != watch.Added || p.Name != fmt.Sprintf("pod-%05d", i) || p.ResourceVersion != strconv.Itoa(initialRV+1+i) {
					t.Fatalf("event %d: %s %v", i, ev.Type, ev.Object)
				}
			}
			for _, at := range []int{1, loadBatch - 1, loadBatch, loadBatch + 1, n - 1} {
				l, err := cs.CoreV1().Pods("").List(ctx, metav1.ListOptions{
					ResourceVersion: strconv.Itoa(initialRV + at), ResourceVersionMatch: metav1.ResourceVersionMatchExact})
				if err != nil {
					t.Fatal(err)
				}
				if len(l.Items) != at {
					t.Errorf("list at the RV of the %dth pod: %d pods", at, len(l.Items))
				}
			}
		})
	}
}

// commonPrefix returns the length of the common prefix of a and b.
func commonPrefix(a, b []byte) int {
	n := min(len(a), len(b))
	for i := range n {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}
