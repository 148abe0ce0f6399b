# shardinformer — see README.md. Every target installs what it needs: a fresh
# machine with Go and the Go module proxy is enough.
SHELL    := /bin/bash
GO       ?= go
GOBIN    := $(shell $(GO) env GOPATH)/bin
export PATH := $(GOBIN):$(PATH)

.PHONY: all test fuzz vet run bench profile e2e cluster cluster-bins smoke upstream soak clean

all: test

## test: go vet, every unit, conformance and model test under the race detector, the
## examples' own modules, and a brief run of every fuzz target (FUZZTIME, default 3s each).
## Installs headless Chromium first where it can (hack/browser.sh), for the HTML report's browser test.
FUZZTIME ?= 3s
EXAMPLES := $(patsubst %/go.mod,%,$(wildcard examples/*/go.mod))
test: vet
	bash hack/browser.sh
	$(GO) test -race -count=1 -timeout 20m ./...
	@for m in $(EXAMPLES); do echo "== $$m"; (cd $$m && $(GO) vet ./... && $(GO) test -race -count=1 -timeout 10m ./...) || exit 1; done
	bash hack/fuzz.sh $(FUZZTIME)

## fuzz: every fuzz target for FUZZTIME each (make fuzz FUZZTIME=5m for a real session; FUZZMINIMIZETIME
## bounds the minimization of each new input, default 100x).
fuzz:
	bash hack/fuzz.sh $(FUZZTIME)

vet:
	@unformatted="$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))"; \
	if [ -n "$$unformatted" ]; then echo "gofmt needed:"; echo "$$unformatted"; exit 1; fi
	$(GO) vet ./...

## run: the load generator's controller scenario on its embedded simulated cluster (100k pods; client-go's
## stack and ours, each alone in its own process, one run each); prints where report.html and report.json are.
## ARGS=... adds flags (go run ./cmd/loadgen --help), e.g. ARGS="--runs 3" for medians and spread.
run:
	$(GO) run ./cmd/loadgen --runs 1 $(ARGS)

## soak: the load generator's soak scenario: 100k pods, SOAK (default 1h) of churn at 500 writes/s under
## faults, client-go's stack and ours each alone in its own process, one after the other (about 2×SOAK +
## 3 min); live heap after GC and goroutines sampled every minute must be flat after the warm-up (slope
## within ±2%/h), the cache equal to the server at the end, no handler panic. Writes report.json and
## report.html (charts of every sampled structure) into bench/results/soak/<time>-soak/. ARGS=... adds flags,
## e.g. make soak SOAK=10m ARGS="--soak-sample-every 30s". The CI's short form: TestSoakShort (go test ./cmd/loadgen).
SOAK ?= 1h
soak:
	$(GO) run ./cmd/loadgen --scenario soak --soak $(SOAK) --out-dir bench/results/soak $(ARGS)

## bench: benchmarks against client-go, raw output and benchstat comparison under bench/results/.
bench:
	bash bench/run.sh

## profile: CPU and allocation profiles of three workloads (sync, updates, readers) at 100k pods under
## pkg/profile, ~1.5 min; profiles land in profiles/ (profiles/README.md: reading them). ARGS=... for more.
profile:
	$(GO) run ./cmd/profile -out profiles $(ARGS)

## cluster-bins: build kube-apiserver and etcd from the Go module proxy into bin/ (cached).
cluster-bins:
	bash hack/build-cluster-bins.sh

## cluster: start a real etcd + kube-apiserver on loopback for manual use (loadgen --kubeconfig).
cluster: cluster-bins
	$(GO) run ./e2e/cmd/cluster

## e2e: the end-to-end suite against a real kube-apiserver and etcd (and loadgen's --reuse-pods on one).
e2e: cluster-bins
	SHARDINFORMER_E2E_REQUIRE=1 $(GO) test -tags e2e -count=1 -timeout 10m -run OnRealCluster ./cmd/loadgen/
	SHARDINFORMER_E2E_REQUIRE=1 $(GO) test -tags e2e -count=1 -timeout 45m -v ./e2e/ ./apisim/ ./replicas/runner/ 2>&1 | tee e2e.log | grep -E '^(=== RUN|\s*--- |PASS|FAIL|ok|\s+\S+_test.go)' ; test "$${PIPESTATUS[0]}" -eq 0

## smoke: every other target's command at tiny sizes (run, bench, profile, cluster, clean), so none rots; CI runs it.
smoke: cluster-bins
	bash hack/smoke.sh

## upstream: k8s.io/kubernetes' controller integration tests (test/integration/<pkg>) on client-go's informer
## factories and on ours (import paths swapped), one package at a time; exits non-zero when ours passes fewer.
## UPSTREAM_PKGS="replicaset job" and UPSTREAM_RUN=regexp choose (hack/upstream/README.md; timings per package in
## bench/results/upstream.md). Needs bin/etcd (built when missing); the scratch module lives under TMPDIR (/tmp).
upstream:
	bash hack/upstream.sh

clean:
	rm -rf bin/ profiles/*.pprof e2e.log
