package promadapter_test

import (
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/shardinformer/shardinformer/promadapter"
)

// dashboard is the part of a Grafana dashboard the test reads.
type dashboard struct {
	Templating struct {
		List []struct {
			Name, Type string
			Query      json.RawMessage
		}
	}
	Panels []struct {
		Title   string
		Targets []struct{ Expr string }
	}
}

// The dashboard parses; it has instance and informer variables; every
// selector of every panel query is narrowed by $instance, and every
// shardinformer_* selector also by $informer; every shardinformer_* metric
// it names is one this package exports.
func TestDashboard(t *testing.T) {
	raw, err := os.ReadFile("../dashboards/shardinformer.json")
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatalf("dashboard does not parse: %v", err)
	}
	vars := map[string]string{}
	for _, v := range d.Templating.List {
		vars[v.Name] = v.Type
	}
	for _, name := range []string{"datasource", "instance", "informer"} {
		if vars[name] == "" {
			t.Errorf("no %q template variable (have %v)", name, vars)
		}
	}

	exported := exportedMetrics(t)
	// A metric name (by its prefix, so label names never match), then its
	// label selector if any.
	selector := regexp.MustCompile(`\b((?:shardinformer|loadgen|go|process)_[a-z_]+)(\{[^}]*\})?`)
	for _, p := range d.Panels {
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no queries", p.Title)
		}
		for _, tg := range p.Targets {
			ms := selector.FindAllStringSubmatch(tg.Expr, -1)
			if len(ms) == 0 {
				t.Errorf("panel %q: query %q names no metric", p.Title, tg.Expr)
			}
			for _, m := range ms {
				name, sel := m[1], m[2]
				if !strings.Contains(sel, `instance=~"$instance"`) {
					t.Errorf("panel %q: %s%s not narrowed by $instance", p.Title, name, sel)
				}
				if !strings.HasPrefix(name, "shardinformer_") {
					continue
				}
				if !strings.Contains(sel, `informer=~"$informer"`) {
					t.Errorf("panel %q: %s%s not narrowed by $informer", p.Title, name, sel)
				}
				family := strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(name, "_bucket"), "_sum"), "_count")
				if !exported[family] && !exported[name] {
					t.Errorf("panel %q: %s is not a metric of promadapter", p.Title, name)
				}
			}
		}
	}
}

// exportedMetrics returns the names of the metrics an Observer and a
// Collector register.
func exportedMetrics(t *testing.T) map[string]bool {
	t.Helper()
	reg := describingRegisterer{prometheus.NewRegistry(), map[string]bool{}}
	if _, err := promadapter.NewObserver(reg); err != nil {
		t.Fatal(err)
	}
	if err := reg.Register(promadapter.NewCollector(fakeStats{})); err != nil {
		t.Fatal(err)
	}
	if len(reg.names) == 0 {
		t.Fatal("no metric described")
	}
	return reg.names
}

// describingRegisterer records the names of the metrics registered on it.
type describingRegisterer struct {
	*prometheus.Registry
	names map[string]bool
}

func (r describingRegisterer) Register(c prometheus.Collector) error {
	descs := make(chan *prometheus.Desc)
	go func() { c.Describe(descs); close(descs) }()
	fq := regexp.MustCompile(`fqName: "([^"]+)"`)
	for d := range descs {
		r.names[fq.FindStringSubmatch(d.String())[1]] = true
	}
	return r.Registry.Register(c)
}
