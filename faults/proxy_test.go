package faults

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/shardinformer/shardinformer/apisim"
	"github.com/shardinformer/shardinformer/internal/testkit"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
)

// rawGet sends a GET for path to p with Accept media and returns the
// response (body unread).
func rawGet(t *testing.T, p *Proxy, path, media string) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, p.URL()+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", media)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// TestStatusFaults: a status fault answers with the Status of its kind in
// the negotiated content type — JSON, or protobuf in the "k8s\x00"
// envelope — with Retry-After on a 429, and client-go decodes it as that
// error.
func TestStatusFaults(t *testing.T) {
	sim := newSim(t, 10)
	for _, tc := range []struct {
		kind   Kind
		code   int
		reason metav1.StatusReason
		is     func(error) bool
	}{
		{InternalError, 500, metav1.StatusReasonInternalError, apierrors.IsInternalError},
		{TooManyRequests, 429, metav1.StatusReasonTooManyRequests, apierrors.IsTooManyRequests},
		{Gone, 410, metav1.StatusReasonExpired, apierrors.IsResourceExpired},
	} {
		for _, media := range medias {
			t.Run(tc.kind.String()+"/"+shortMedia(media), func(t *testing.T) {
				p := newProxy(t, sim.RESTConfig(), Config{Seed: testkit.FaultSeed(t), Rules: map[Kind]Rule{tc.kind: {P: 1, Max: 1, Duration: 3 * time.Second}}})
				accept := media
				if media == apisim.ContentTypeProtobuf {
					accept = media + ", application/json"
				}
				resp := rawGet(t, p, "/api/v1/pods", accept)
				body, err := io.ReadAll(resp.Body)
				if err != nil {
					t.Fatal(err)
				}
				if resp.StatusCode != tc.code {
					t.Fatalf("status %d, want %d; body %q", resp.StatusCode, tc.code, body)
				}
				if ct := resp.Header.Get("Content-Type"); ct != media {
					t.Errorf("Content-Type %q, want %q", ct, media)
				}
				if media == apisim.ContentTypeProtobuf && !bytes.HasPrefix(body, []byte("k8s\x00")) {
					t.Errorf("protobuf body without the k8s envelope: %q", body[:min(len(body), 16)])
				}
				obj, _, err := codecs.UniversalDeserializer().Decode(body, nil, nil)
				if err != nil {
					t.Fatalf("decoding the Status: %v", err)
				}
				st, ok := obj.(*metav1.Status)
				if !ok || int(st.Code) != tc.code || st.Reason != tc.reason || !strings.Contains(st.Message, injectedMessage) {
					t.Fatalf("got %#v, want a Status %d %s", obj, tc.code, tc.reason)
				}
				ra := resp.Header.Get("Retry-After")
				if tc.kind == TooManyRequests {
					if ra != "3" || st.Details == nil || st.Details.RetryAfterSeconds != 3 {
						t.Errorf("Retry-After %q, details %+v; want 3 s in both", ra, st.Details)
					}
				} else if ra != "" {
					t.Errorf("Retry-After %q on a %d", ra, tc.code)
				}
				if s := p.Stats(); s.Injected[tc.kind] != 1 || s.Total() != 1 {
					t.Errorf("stats %+v, want one %s", s, tc.kind)
				}
				// Max: 1 — the next request goes through, and client-go
				// reads the list.
				cs := clientset(t, p, media)
				list, err := cs.CoreV1().Pods("").List(t.Context(), metav1.ListOptions{})
				if err != nil || len(list.Items) != 10 {
					t.Fatalf("after the fault: %v, %d pods", err, len(list.Items))
				}
				if s := p.Stats(); s.Vetoed == 0 && s.Drawn > 1 {
					t.Errorf("stats %+v: a second draw was not vetoed", s)
				}
			})
		}
	}
	t.Run("cbor", func(t *testing.T) {
		p := newProxy(t, sim.RESTConfig(), Config{Rules: map[Kind]Rule{InternalError: {P: 1}}})
		resp := rawGet(t, p, "/api/v1/pods", "application/cbor, application/json;q=0.9")
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		if ct := resp.Header.Get("Content-Type"); resp.StatusCode != 500 || ct != "application/cbor" || !bytes.HasPrefix(body, []byte{0xd9, 0xd9, 0xf7}) {
			t.Fatalf("%d %q %x, want a 500 in self-described CBOR", resp.StatusCode, ct, body[:min(len(body), 8)])
		}
		obj, _, err := codecs.UniversalDeserializer().Decode(body, nil, nil)
		if st, ok := obj.(*metav1.Status); err != nil || !ok || st.Code != 500 {
			t.Fatalf("decoded %#v, %v", obj, err)
		}
		// Nothing acceptable, or anything: JSON.
		for _, accept := range []string{"text/plain", "*/*", ""} {
			resp := rawGet(t, p, "/api/v1/pods", accept)
			_, _ = io.Copy(io.Discard, resp.Body)
			if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
				t.Errorf("Accept %q: Content-Type %q, want JSON", accept, ct)
			}
		}
	})
	t.Run("client-go", func(t *testing.T) {
		for _, tc := range []struct {
			kind Kind
			is   func(error) bool
		}{{InternalError, apierrors.IsInternalError}, {Gone, apierrors.IsResourceExpired}} {
			p := newProxy(t, sim.RESTConfig(), Config{Rules: map[Kind]Rule{tc.kind: {P: 1}}})
			_, err := clientset(t, p, apisim.ContentTypeProtobuf).CoreV1().Pods("").List(t.Context(), metav1.ListOptions{})
			if !tc.is(err) {
				t.Errorf("%s: client-go's List returned %v", tc.kind, err)
			}
		}
	})
}

// TestCutTruncates: a cut ends the body after the drawn number of bytes,
// without a clean end: the client reads fewer bytes than the server sent
// and an error, in a list and in a watch.
func TestCutTruncates(t *testing.T) {
	sim := newSim(t, 300)
	full := func(path, media string) int {
		direct, err := http.NewRequest(http.MethodGet, sim.URL()+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		direct.Header.Set("Accept", media)
		resp, err := http.DefaultClient.Do(direct)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return len(b)
	}
	for _, media := range medias {
		t.Run(shortMedia(media), func(t *testing.T) {
			seed := testkit.FaultSeed(t)
			p := newProxy(t, sim.RESTConfig(), Config{Seed: seed, Bytes: 256 << 10, Rules: map[Kind]Rule{Cut: {P: 1}}})
			want := draw(seed, 0, p.cfg.Rules, p.cfg.Bytes).offset
			size := full("/api/v1/pods", media)
			if int64(size) <= 256<<10 {
				t.Fatalf("the list is %d bytes, too small for the test", size)
			}
			resp := rawGet(t, p, "/api/v1/pods", media)
			b, err := io.ReadAll(resp.Body)
			if err == nil {
				t.Errorf("read the whole cut body (%d of %d bytes) without an error", len(b), size)
			}
			if int64(len(b)) != want {
				t.Errorf("read %d bytes, want the drawn offset %d (the list is %d)", len(b), want, size)
			}
			// A watch from resourceVersion 0 streams the state as events:
			// cut too, mid-stream.
			resp = rawGet(t, p, "/api/v1/pods?watch=true&resourceVersion=0", media)
			want = draw(seed, 1, p.cfg.Rules, p.cfg.Bytes).offset
			b, err = io.ReadAll(resp.Body)
			if err == nil || int64(len(b)) != want {
				t.Errorf("watch: read %d bytes, err %v; want %d bytes and an error", len(b), err, want)
			}
			if s := p.Stats(); s.Injected[Cut] != 2 {
				t.Errorf("stats %+v, want 2 cuts", s)
			}
		})
	}
}

// TestStall: a stall holds the response for its duration; StopFaults ends
// one in progress.
func TestStall(t *testing.T) {
	sim := newSim(t, 50)
	p := newProxy(t, sim.RESTConfig(), Config{Bytes: 1024, Rules: map[Kind]Rule{Stall: {P: 1, Max: 1, Duration: 300 * time.Millisecond}}})
	start := time.Now()
	resp := rawGet(t, p, "/api/v1/pods", "application/json")
	if _, err := io.ReadAll(resp.Body); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d < 300*time.Millisecond {
		t.Errorf("a 300ms stall took %v", d)
	}
	if n := p.Stats().Injected[Stall]; n != 1 {
		t.Errorf("%d stalls injected, want 1", n)
	}

	long := newProxy(t, sim.RESTConfig(), Config{Bytes: 1024, Rules: map[Kind]Rule{Stall: {P: 1, Duration: time.Hour}}})
	done := make(chan error, 1)
	go func() { // a client stuck in the hour-long stall
		req, _ := http.NewRequest(http.MethodGet, long.URL()+"/api/v1/pods", nil)
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			_, err = io.ReadAll(resp.Body)
			resp.Body.Close()
		}
		done <- err
	}()
	testkit.Eventually(t, "the stall to begin", func() bool { return long.Stats().Injected[Stall] == 1 })
	long.StopFaults()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("after StopFaults: %v", err)
		}
	case <-time.After(testkit.Guard):
		t.Fatal("StopFaults did not end the stall")
	}
}

// TestWatchErrorEvent: a 410 on a watch is an ERROR event with a 410
// Expired Status in the stream's framing, after whole events, and then the
// end of the stream — decoded by client-go's watch decoder in JSON and
// protobuf.
func TestWatchErrorEvent(t *testing.T) {
	sim := newSim(t, 200)
	for _, media := range medias {
		t.Run(shortMedia(media), func(t *testing.T) {
			p := newProxy(t, sim.RESTConfig(), Config{Seed: testkit.FaultSeed(t), Bytes: 128 << 10, Rules: map[Kind]Rule{Gone: {P: 1, Max: 1}},
				Eligible: func(method, _, q string) bool { return strings.Contains(q, "watch=") }})
			cs := clientset(t, p, media)
			w, err := cs.CoreV1().Pods("").Watch(t.Context(), metav1.ListOptions{ResourceVersion: "0"})
			if err != nil {
				t.Fatal(err)
			}
			defer w.Stop()
			added := 0
			var last watch.Event
			for ev := range w.ResultChan() {
				last = ev
				if ev.Type == watch.Added {
					added++
					continue
				}
				break
			}
			if last.Type != watch.Error {
				t.Fatalf("after %d ADDED events: %v %T, want an ERROR event", added, last.Type, last.Object)
			}
			err = apierrors.FromObject(last.Object)
			if !apierrors.IsResourceExpired(err) || !strings.Contains(err.Error(), injectedMessage) {
				t.Fatalf("ERROR event %v, want a 410 Expired Status from the proxy", err)
			}
			if added == 0 || added >= 200 {
				t.Errorf("%d ADDED events before the ERROR, want some but not all of 200 (offset %d)", added, draw(p.cfg.Seed, 0, p.cfg.Rules, p.cfg.Bytes).offset)
			}
			select {
			case ev, ok := <-w.ResultChan():
				if ok {
					t.Errorf("event %v after the ERROR event", ev.Type)
				}
			case <-time.After(testkit.Guard):
				t.Error("the stream did not end after the ERROR event")
			}
			if n := p.Stats().Injected[Gone]; n != 1 {
				t.Errorf("%d 410s injected, want 1", n)
			}
		})
	}
}

// TestDraws: the same seed makes the same draws; another seed others; the
// kinds come in their proportions.
func TestDraws(t *testing.T) {
	rules := map[Kind]Rule{Cut: {P: 0.1}, Stall: {P: 0.1}, InternalError: {P: 0.1}, TooManyRequests: {P: 0.1}, Gone: {P: 0.1}}
	const n = 20000
	seq := func(seed int64) []fault {
		out := make([]fault, n)
		for i := range out {
			out[i] = draw(seed, uint64(i), rules, 1000)
		}
		return out
	}
	a, b, c := seq(7), seq(7), seq(8)
	same, counts := 0, map[Kind]int{}
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("draw %d with seed 7: %+v then %+v", i, a[i], b[i])
		}
		if a[i] == c[i] {
			same++
		}
		if !a[i].none {
			counts[a[i].kind]++
			if a[i].offset < 0 || a[i].offset >= 1000 {
				t.Fatalf("offset %d out of [0, 1000)", a[i].offset)
			}
		}
	}
	if same > n*7/10 { // ~0.5·0.5 + 5·0.1·0.1·0.001 of draws agree by chance, plus offsets
		t.Errorf("seeds 7 and 8 agree on %d of %d draws", same, n)
	}
	for _, k := range Kinds() {
		if c := counts[k]; c < n/10*8/10 || c > n/10*12/10 {
			t.Errorf("%s drawn %d times of %d, want about %d", k, c, n, n/10)
		}
	}
}

// TestBounds: Max caps the faults of a kind, Every spaces them, and
// StopFaults/ResumeFaults switch injection off and on.
func TestBounds(t *testing.T) {
	sim := newSim(t, 5)
	get := func(p *Proxy) int {
		resp := rawGet(t, p, "/api/v1/pods", "application/json")
		_, _ = io.Copy(io.Discard, resp.Body)
		return resp.StatusCode
	}
	p := newProxy(t, sim.RESTConfig(), Config{Rules: map[Kind]Rule{InternalError: {P: 1, Max: 3}}})
	var codes []int
	for range 6 {
		codes = append(codes, get(p))
	}
	if want := []int{500, 500, 500, 200, 200, 200}; !equalInts(codes, want) {
		t.Errorf("with max=3: %v, want %v", codes, want)
	}
	if s := p.Stats(); s.Injected[InternalError] != 3 || s.Vetoed != 3 || s.Requests != 6 {
		t.Errorf("stats %+v", s)
	}

	e := newProxy(t, sim.RESTConfig(), Config{Rules: map[Kind]Rule{InternalError: {P: 1, Every: time.Hour}}})
	if a, b := get(e), get(e); a != 500 || b != 200 {
		t.Errorf("with every=1h: %d then %d, want 500 then 200", a, b)
	}

	s := newProxy(t, sim.RESTConfig(), Config{Max: -1, Rules: map[Kind]Rule{TooManyRequests: {P: 1}}})
	if c := get(s); c != 429 {
		t.Errorf("before StopFaults: %d", c)
	}
	at := s.StopFaults()
	if c := get(s); c != 200 {
		t.Errorf("after StopFaults: %d", c)
	}
	if st := s.Stats(); !st.Stopped || !st.StoppedAt.Equal(at) || s.StopFaults() != at {
		t.Errorf("stats %+v, stopped at %v", st, at)
	}
	s.ResumeFaults()
	if c := get(s); c != 429 {
		t.Errorf("after ResumeFaults: %d", c)
	}
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestHTTPSUpstream: the proxy serves plain HTTP on loopback and forwards
// to an HTTPS upstream with the TLS configuration and credentials of its
// rest.Config; ClientConfig gives clients neither.
func TestHTTPSUpstream(t *testing.T) {
	up := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer secret" {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"5"},"items":[]}`)
	}))
	up.Config.ErrorLog = log.New(io.Discard, "", 0) // the untrusted case's handshake errors
	up.StartTLS()
	t.Cleanup(up.Close)
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: up.Certificate().Raw})
	if _, err := x509.ParseCertificate(up.Certificate().Raw); err != nil {
		t.Fatal(err)
	}
	upstream := &rest.Config{Host: up.URL, BearerToken: "secret", TLSClientConfig: rest.TLSClientConfig{CAData: ca}}
	p := newProxy(t, upstream, Config{Rules: map[Kind]Rule{}})
	cfg := p.ClientConfig(upstream)
	if cfg.BearerToken != "" || len(cfg.TLSClientConfig.CAData) > 0 || !strings.HasPrefix(cfg.Host, "http://127.0.0.1:") {
		t.Fatalf("ClientConfig kept credentials or TLS: %+v", cfg)
	}
	cs := clientset(t, p, "application/json")
	list, err := cs.CoreV1().Pods("").List(t.Context(), metav1.ListOptions{})
	if err != nil || list.ResourceVersion != "5" {
		t.Fatalf("List through the proxy: %v (%v)", err, list)
	}
	// Without the CA the proxy cannot reach the upstream: a 502 Status.
	bad := newProxy(t, &rest.Config{Host: up.URL, BearerToken: "secret"}, Config{})
	_, err = clientset(t, bad, "application/json").CoreV1().Pods("").List(t.Context(), metav1.ListOptions{})
	var se apierrors.APIStatus
	if !errors.As(err, &se) || se.Status().Code != http.StatusBadGateway {
		t.Errorf("untrusted upstream: %v, want a 502", err)
	}
}

// TestCloseEndsStreams: Close ends open watches and waits for their
// handlers.
func TestCloseEndsStreams(t *testing.T) {
	defer testkit.NoGoroutines(t, "shardinformer/faults.")
	sim := newSim(t, 5)
	p, err := New(Config{Upstream: sim.RESTConfig()})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	if err := p.Start(); !errors.Is(err, ErrStarted) {
		t.Errorf("second Start: %v", err)
	}
	cs := clientset(t, p, "application/json")
	w, err := cs.CoreV1().Pods("").Watch(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case _, ok := <-w.ResultChan():
		for ok {
			_, ok = <-w.ResultChan()
		}
	case <-time.After(testkit.Guard):
		t.Fatal("the watch did not end at Close")
	}
	if err := p.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if err := p.Start(); !errors.Is(err, ErrClosed) {
		t.Errorf("Start after Close: %v", err)
	}
}

// TestWatchRedraws: a watch draws again after every Config.Bytes of its
// stream without a fault, so one long watch meets many faults; a request's
// 500 or 429 is never drawn mid-stream.
func TestWatchRedraws(t *testing.T) {
	sim := newSim(t, 200)
	p := newProxy(t, sim.RESTConfig(), Config{Seed: testkit.FaultSeed(t), Max: -1, Bytes: 16 << 10,
		Rules: map[Kind]Rule{Stall: {P: 0.5, Duration: time.Millisecond}, InternalError: {P: 0.5}}})
	var resp *http.Response
	for resp == nil || resp.StatusCode != http.StatusOK { // the request itself may draw a 500
		resp = rawGet(t, p, "/api/v1/pods?watch=true&resourceVersion=0", "application/json")
	}
	lines := 0
	dec := bytes.Buffer{}
	buf := make([]byte, 64<<10)
	for lines < 200 {
		n, err := resp.Body.Read(buf)
		dec.Write(buf[:n])
		lines = bytes.Count(dec.Bytes(), []byte("\n"))
		if err != nil {
			t.Fatalf("after %d events: %v", lines, err)
		}
	}
	s := p.Stats()
	if s.Injected[Stall] < 10 {
		t.Errorf("%d stalls in a %d-byte watch with a draw every 16 KiB, want many: %+v", s.Injected[Stall], dec.Len(), s)
	}
	if errs := s.Injected[InternalError]; errs != s.Requests-1 {
		t.Errorf("%d 500s for %d requests: drawn mid-stream?", errs, s.Requests)
	}
}
