package selfstat

import (
	"bytes"
	"io"
	"runtime/pprof"
	"time"

	"github.com/google/pprof/profile"
)

// CPUAttribution profiles the CPU at 100 Hz and splits the samples by the
// goroutine labels loadgen sets (impl, role). Goroutines inherit labels from
// their creator, so an informer's reflector, decoders, HTTP connections and
// handlers all count for it; the Go runtime's background GC workers carry no
// label and are reported as unattributed. Only one CPU profile runs in a
// process at a time.
type CPUAttribution struct {
	buf bytes.Buffer
}

// StartCPUAttribution starts the CPU profiler; it fails if the profiler is
// already running.
func StartCPUAttribution() (*CPUAttribution, error) {
	a := &CPUAttribution{}
	if err := pprof.StartCPUProfile(&a.buf); err != nil {
		return nil, err
	}
	return a, nil
}

// Stop ends the profile and returns CPU time per label key (ByLabel).
func (a *CPUAttribution) Stop() (map[string]time.Duration, error) {
	pprof.StopCPUProfile()
	return ByLabel(&a.buf)
}

// ByLabel splits a CPU profile's samples by their impl and role labels:
// "impl/role", "impl" or "role" where one is missing ("server", "churn"),
// and "" for unlabelled samples.
func ByLabel(r io.Reader) (map[string]time.Duration, error) {
	p, err := profile.Parse(r)
	if err != nil {
		return nil, err
	}
	// Sample values: [samples count, cpu nanoseconds].
	vi := len(p.SampleType) - 1
	out := map[string]time.Duration{}
	for _, s := range p.Sample {
		key := ""
		if impl := s.Label["impl"]; len(impl) > 0 {
			key = impl[0]
		}
		if role := s.Label["role"]; len(role) > 0 {
			if key != "" {
				key += "/"
			}
			key += role[0]
		}
		out[key] += time.Duration(s.Value[vi])
	}
	return out, nil
}
