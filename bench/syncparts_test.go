package bench

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"testing"

	corev1 "k8s.io/api/core/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/streaming"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/scheme"
	restclientwatch "k8s.io/client-go/rest/watch"

	"github.com/shardinformer/shardinformer/apisim"
)

// watchListPath asks for a WatchList: the pods as ADDED events, then the
// initial-events-end bookmark, then live events.
const watchListPath = "/api/v1/pods?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true"

// BenchmarkSyncParts splits BenchmarkDecodeSync's initial sync into its
// parts, each timed alone on the same BENCH_DECODE_OBJECTS pods (issue 11):
//   - part=serve: the server writing the response and the client reading
//     its bytes over loopback HTTP without decoding them (LIST: the whole
//     body; WatchList: every frame up to the initial-events-end bookmark);
//   - part=decode: client-go's watch decoder (one goroutine, as its
//     StreamWatcher) turning the WatchList bytes, held in memory, into pods,
//     either dropped after each event (keep=false, as decode benchmarks
//     replaying frames do) or all kept until the end (keep=true, as an
//     informer's store keeps them: the heap grows by every pod).
//
// The sum of the two against BenchmarkDecodeSync's wall shows whether the
// server, the transfer or the client dominates a sync.
func BenchmarkSyncParts(b *testing.B) {
	n := benchDecodeObjects
	srv := startSim(b, n)
	for _, list := range []string{"list", "watchlist"} {
		b.Run(fmt.Sprintf("part=serve/objects=%d/list=%s", n, list), func(b *testing.B) {
			var size int
			for range b.N {
				var err error
				if list == "list" {
					size, err = readList(srv)
				} else {
					size, err = readWatchList(srv, n, io.Discard)
				}
				if err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(size)/float64(n), "B/object")
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/object")
		})
	}
	var stream bytes.Buffer
	if _, err := readWatchList(srv, n, &stream); err != nil {
		b.Fatal(err)
	}
	for _, keep := range []bool{false, true} {
		b.Run(fmt.Sprintf("part=decode/decoder=client-go/objects=%d/keep=%t", n, keep), func(b *testing.B) {
			b.ReportAllocs()
			for range b.N {
				b.StopTimer()
				runtime.GC()
				b.StartTimer()
				if err := decodeClientGo(stream.Bytes(), n, keep); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/object")
		})
	}
}

// get sends a protobuf GET of path to srv.
func get(srv *apisim.Server, path string) (*http.Response, error) {
	req, err := http.NewRequest(http.MethodGet, srv.URL()+path, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", apisim.ContentTypeProtobuf)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		return nil, fmt.Errorf("GET %s: %s", path, resp.Status)
	}
	return resp, nil
}

// readList reads a whole protobuf LIST of the pods and returns its size.
func readList(srv *apisim.Server) (int, error) {
	resp, err := get(srv, "/api/v1/pods")
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	m, err := io.Copy(io.Discard, resp.Body)
	return int(m), err
}

// readWatchList reads a protobuf WatchList's first n+1 frames (n ADDED
// events and the initial-events-end bookmark) into w, length prefixes
// included, and returns their size.
func readWatchList(srv *apisim.Server, n int, w io.Writer) (int, error) {
	resp, err := get(srv, watchListPath)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	r := bufio.NewReaderSize(resp.Body, 64<<10)
	size := 0
	var frame []byte
	for range n + 1 {
		var hdr [4]byte
		if _, err := io.ReadFull(r, hdr[:]); err != nil {
			return size, err
		}
		l := int(binary.BigEndian.Uint32(hdr[:]))
		if cap(frame) < l {
			frame = make([]byte, l)
		}
		frame = frame[:l]
		if _, err := io.ReadFull(r, frame); err != nil {
			return size, err
		}
		if _, err := w.Write(hdr[:]); err != nil {
			return size, err
		}
		if _, err := w.Write(frame); err != nil {
			return size, err
		}
		size += 4 + l
	}
	return size, nil
}

// decodeClientGo decodes the n ADDED events of a protobuf watch stream with
// client-go's watch decoder, keeping every pod until it returns if keep.
func decodeClientGo(stream []byte, n int, keep bool) error {
	info, ok := k8sruntime.SerializerInfoForMediaType(scheme.Codecs.SupportedMediaTypes(), apisim.ContentTypeProtobuf)
	if !ok || info.StreamSerializer == nil {
		return fmt.Errorf("no protobuf stream serializer")
	}
	body := io.NopCloser(bytes.NewReader(stream))
	frames := info.StreamSerializer.Framer.NewFrameReader(body)
	dec := restclientwatch.NewDecoder(streaming.NewDecoder(frames, info.StreamSerializer.Serializer), scheme.Codecs.UniversalDeserializer())
	var kept []*corev1.Pod
	if keep {
		kept = make([]*corev1.Pod, 0, n)
	}
	for i := range n {
		typ, obj, err := dec.Decode()
		if err != nil {
			return err
		}
		p, ok := obj.(*corev1.Pod)
		if typ != watch.Added || !ok {
			return fmt.Errorf("event %d: %s %T, want ADDED *v1.Pod", i, typ, obj)
		}
		if keep {
			kept = append(kept, p)
		}
	}
	runtime.KeepAlive(kept)
	return nil
}
