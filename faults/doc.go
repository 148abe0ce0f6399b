// Package faults is a seeded, bounded fault-injecting HTTP proxy on
// loopback, in front of the simulated API server (package apisim) or a
// real one, so that informers, the wire decoder and controllers can be
// run — in tests, the load generator and the e2e suite — under what the
// network and an overloaded API server do to them.
//
// # Faults
//
// Every eligible request (by default every GET: lists, watches, gets)
// draws at most one fault; the kinds' probabilities partition [0, 1):
//
//	cut    the connection ends after a random number of response bytes
//	       (uniform in [0, Config.Bytes)): a list's body or a watch stream
//	       truncated, usually in the middle of an object or frame
//	stall  the response stops for Rule.Duration after a random number of bytes
//	500    a 500 InternalError Status
//	429    a 429 TooManyRequests Status with Retry-After (Rule.Duration)
//	410    a list: a 410 Expired Status; a watch: after a random number of
//	       bytes, at the next frame boundary, an ERROR watch event carrying
//	       a 410 Expired Status, then the end of the stream (as the API
//	       server's watch cache ends a watch it cannot continue)
//
// A watch stream also draws again (cut, stall or 410 only) after every
// Config.Bytes of its stream that passed without a fault, so that faults
// follow a long watch's traffic rather than its one request.
//
// Statuses are encoded in the content type negotiated from the request's
// Accept header and watch events in the stream's own framing (JSON lines,
// protobuf length-prefixed frames of meta/v1 WatchEvent holding the
// "k8s\x00"-enveloped Status, CBOR sequences), all with apimachinery's
// serializers and framers. A watch in a framing the proxy does not know
// is passed through untouched.
//
// Seeded: the n-th draw is a pure function of (Config.Seed, n), so the same
// seed gives the same sequence of draws (which request makes the n-th draw
// depends on arrival order). Bounded: at most Rule.Max faults of a kind
// (Config.Max, DefaultMax, by default) and at least Rule.Every between two
// of a kind; a draw a bound refuses is counted as vetoed. Stats counts the
// requests, the draws and the faults that happened by kind. StopFaults ends
// injection (pending faults in open streams are dropped, stalls end), so
// that a test or the load generator can measure the time to converge after
// the faults stop; ResumeFaults starts it again.
//
// ParseSpec reads the command-line form, e.g.
// "cut=0.02,stall=0.01:2s,500=0.01,429=0.01,410=0.005,seed=7" (SpecHelp).
//
// # Upstream and TLS
//
// The proxy serves plain HTTP on loopback and forwards to Config.Upstream
// with that rest.Config's transport (rest.TransportFor): its TLS settings
// and credentials, so an HTTPS kube-apiserver works as well as apisim.
// ClientConfig turns a client's rest.Config into one that reaches the
// upstream through the proxy (the proxy's URL, no TLS, no credentials).
// Upgrade requests (exec, port-forward) are not supported.
//
// # Usage
//
//	p, err := faults.New(faults.Config{Upstream: upstreamConfig, Seed: 7,
//		Rules: map[faults.Kind]faults.Rule{faults.Cut: {P: 0.05}, faults.Gone: {P: 0.02, Max: 10}}})
//	err = p.Start()                        // listens on 127.0.0.1:0
//	defer p.Close()                        // ends every stream, waits for every goroutine
//	cs, err := kubernetes.NewForConfig(p.ClientConfig(clientConfig))
//	// … informers on cs, under faults …
//	stopped := p.StopFaults()
//	// … wait until the caches equal the server: time.Since(stopped) …
//	fmt.Println(p.Stats().ByName())
//
// # Concurrency
//
// A Proxy's methods are safe for concurrent use. Start starts the serve
// goroutine (http.Server.Serve), which net/http makes start one goroutine
// per connection; each request is served on its connection's goroutine,
// which owns the request, its upstream request and body and the response
// writer until ServeHTTP returns, and is the only one to read and write
// them. A stall blocks only its request's goroutine. Shared state is the
// draw counter and the fault counters (atomics) and, under Proxy.mu, the
// bounds' bookkeeping (the faults admitted per kind, the last
// injection of each kind) and the stop switch; Proxy.mu is a leaf lock,
// never held while doing I/O. Close closes the listener and every
// connection, cancels every forwarded request and returns only after the
// serve goroutine and every request goroutine have returned.
package faults
