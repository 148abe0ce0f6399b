package main

import (
	"bytes"
	"fmt"
	"html/template"
	"maps"
	"math"
	"os"
	"slices"
	"strings"
)

func sortedKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }

// series is one line of a chart.
type series struct {
	name  string
	color string
	pts   [][2]float64
}

var palette = map[string]string{implOurs: "#1f77b4", implClientGo: "#d62728", "emitted": "#7f7f7f"}

// lineChart draws an SVG line chart. With logX the x axis is log10.
func lineChart(title, xLabel, yLabel string, ss []series, logX bool, yFmt func(float64) string) template.HTML {
	const W, H, L, R, T, B = 760.0, 300.0, 70.0, 150.0, 30.0, 45.0
	fx := func(x float64) float64 {
		if logX {
			return math.Log10(math.Max(x, 1e-9))
		}
		return x
	}
	minX, maxX, maxY := math.Inf(1), math.Inf(-1), 0.0
	for _, s := range ss {
		for _, p := range s.pts {
			minX, maxX = math.Min(minX, fx(p[0])), math.Max(maxX, fx(p[0]))
			maxY = math.Max(maxY, p[1])
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" viewBox="0 0 %.0f %.0f" font-family="sans-serif" font-size="11">`, W, H, W, H)
	fmt.Fprintf(&b, `<text x="%.0f" y="18" font-size="13" font-weight="bold">%s</text>`, L, template.HTMLEscapeString(title))
	if math.IsInf(minX, 1) {
		b.WriteString(`<text x="100" y="150">no data</text></svg>`)
		return template.HTML(b.String())
	}
	if maxX == minX {
		maxX = minX + 1
	}
	if maxY == 0 {
		maxY = 1
	}
	maxY *= 1.05
	pw, ph := W-L-R, H-T-B
	px := func(x float64) float64 { return L + (fx(x)-minX)/(maxX-minX)*pw }
	py := func(y float64) float64 { return T + ph - y/maxY*ph }
	fmt.Fprintf(&b, `<rect x="%.0f" y="%.0f" width="%.0f" height="%.0f" fill="none" stroke="#ccc"/>`, L, T, pw, ph)
	for i := 0; i <= 4; i++ { // y grid
		y := maxY * float64(i) / 4
		fmt.Fprintf(&b, `<line x1="%.0f" x2="%.0f" y1="%.1f" y2="%.1f" stroke="#eee"/><text x="%.0f" y="%.1f" text-anchor="end">%s</text>`,
			L, L+pw, py(y), py(y), L-5, py(y)+4, template.HTMLEscapeString(yFmt(y)))
	}
	if logX { // decades
		for e := math.Floor(minX); e <= math.Ceil(maxX); e++ {
			if e < minX || e > maxX {
				continue
			}
			x := L + (e-minX)/(maxX-minX)*pw
			fmt.Fprintf(&b, `<line x1="%.1f" x2="%.1f" y1="%.0f" y2="%.0f" stroke="#eee"/><text x="%.1f" y="%.0f" text-anchor="middle">%s</text>`,
				x, x, T, T+ph, x, T+ph+14, fmtDur(math.Pow(10, e)))
		}
	} else {
		for i := 0; i <= 5; i++ {
			v := minX + (maxX-minX)*float64(i)/5
			x := L + pw*float64(i)/5
			fmt.Fprintf(&b, `<text x="%.1f" y="%.0f" text-anchor="middle">%.0f</text>`, x, T+ph+14, v)
		}
	}
	fmt.Fprintf(&b, `<text x="%.0f" y="%.0f" text-anchor="middle">%s</text>`, L+pw/2, H-8, template.HTMLEscapeString(xLabel))
	fmt.Fprintf(&b, `<text transform="translate(14 %.0f) rotate(-90)" text-anchor="middle">%s</text>`, T+ph/2, template.HTMLEscapeString(yLabel))
	for i, s := range ss {
		var pts []string
		for _, p := range s.pts {
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", px(p[0]), py(p[1])))
		}
		fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="2" points="%s"/>`, s.color, strings.Join(pts, " "))
		ly := T + 12 + float64(i)*18
		fmt.Fprintf(&b, `<line x1="%.0f" x2="%.0f" y1="%.0f" y2="%.0f" stroke="%s" stroke-width="3"/><text x="%.0f" y="%.0f">%s</text>`,
			L+pw+10, L+pw+30, ly, ly, s.color, L+pw+35, ly+4, template.HTMLEscapeString(s.name))
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

func colorOf(name string) string {
	if c, ok := palette[name]; ok {
		return c
	}
	return "#2ca02c"
}

// throughputChart plots churn events per second: emitted by the generator and
// seen by each implementation (its slowest handler).
func throughputChart(s scenarioReport) template.HTML {
	var ss []series
	emitted := series{name: "emitted", color: colorOf("emitted")}
	seen := map[string]*series{}
	for _, impl := range s.Impls {
		seen[impl] = &series{name: impl + " seen", color: colorOf(impl)}
	}
	for i := 1; i < len(s.Timeline); i++ {
		p, q := s.Timeline[i-1], s.Timeline[i]
		dt := q.T - p.T
		if dt <= 0 || q.Phase == "sync" {
			continue
		}
		emitted.pts = append(emitted.pts, [2]float64{q.T, float64(q.Emitted-p.Emitted) / dt})
		for _, impl := range s.Impls {
			seen[impl].pts = append(seen[impl].pts, [2]float64{q.T, float64(q.Observed[impl]-p.Observed[impl]) / dt})
		}
	}
	ss = append(ss, emitted)
	for _, impl := range s.Impls {
		ss = append(ss, *seen[impl])
	}
	return lineChart("Churn throughput over time", "seconds since the informers started", "events/s", ss, false, func(v float64) string { return fmtRate(v) })
}

// syncChart plots objects synced (initial-list adds handled) over time.
func syncChart(s scenarioReport) template.HTML {
	var ss []series
	for _, impl := range s.Impls {
		sr := series{name: impl, color: colorOf(impl)}
		for _, p := range s.Timeline {
			if p.Phase == "sync" || len(sr.pts) > 0 && sr.pts[len(sr.pts)-1][1] < float64(p.Synced[impl]) {
				sr.pts = append(sr.pts, [2]float64{p.T, float64(p.Synced[impl])})
			}
		}
		ss = append(ss, sr)
	}
	return lineChart("Initial sync", "seconds since the informers started", "objects", ss, false, func(v float64) string { return fmt.Sprintf("%.0f", v) })
}

// latencyChart plots the cumulative distribution of delivery latency.
func latencyChart(irs []implReport) template.HTML {
	var ss []series
	for _, ir := range irs {
		if ir.Latency.Count == 0 {
			continue
		}
		sr := series{name: ir.Name, color: colorOf(ir.Name)}
		var cum uint64
		for _, b := range ir.Latency.Buckets {
			cum += b.Count
			sr.pts = append(sr.pts, [2]float64{b.Le, 100 * float64(cum) / float64(ir.Latency.Count)})
		}
		ss = append(ss, sr)
	}
	return lineChart("Delivery latency (emission → handler), cumulative", "latency (log scale)", "% of events", ss, true, func(v float64) string { return fmt.Sprintf("%.0f%%", v) })
}

// memoryChart plots heap and RSS over time.
func memoryChart(s scenarioReport) template.HTML {
	heap := series{name: "heap", color: "#9467bd"}
	rss := series{name: "RSS", color: "#8c564b"}
	for _, p := range s.Timeline {
		heap.pts = append(heap.pts, [2]float64{p.T, float64(p.Heap)})
		rss.pts = append(rss.pts, [2]float64{p.T, float64(p.RSS)})
	}
	return lineChart("Process memory", "seconds since the informers started", "bytes", []series{heap, rss}, false, func(v float64) string { return fmtBytes(v) })
}

var htmlTmpl = template.Must(template.New("r").Funcs(template.FuncMap{"dur": fmtDur}).Parse(`<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>loadgen report</title>
<style>
body{font-family:sans-serif;margin:24px;color:#222}
table{border-collapse:collapse;margin:12px 0}
td,th{border:1px solid #ddd;padding:4px 10px;text-align:right}
td:first-child,th:first-child{text-align:left}
.pass{color:#080;font-weight:bold}.fail{color:#c00;font-weight:bold}
pre{background:#f6f6f6;padding:8px;overflow-x:auto;font-size:12px}
</style></head><body>
<h1>loadgen report</h1>
<p>{{.Rep.Config.Pods}} pods in {{.Rep.Config.Namespaces}} namespaces on {{.Rep.Config.Target}}, {{.Rep.Config.ContentType}},
mode <b>{{.Rep.Mode}}</b>, GOMAXPROCS {{.Rep.Host.GOMAXPROCS}}, {{.Rep.Host.GoVersion}}, started {{.Rep.StartedAt.Format "2006-01-02 15:04:05"}}.</p>
<pre>{{.Summary}}</pre>
{{range .Scenarios}}
<h2>Scenario {{.Index}}: {{.Impls}}</h2>
<div>{{.Throughput}}</div>
<div>{{.Sync}}</div>
<div>{{.Memory}}</div>
{{end}}
<h2>Latency distribution</h2>
<div>{{.Latency}}</div>
<table><tr><th>implementation</th><th>events</th><th>p50</th><th>p90</th><th>p99</th><th>p99.9</th><th>max</th><th>check</th></tr>
{{range .Rep.Implementations}}<tr><td>{{.Name}}</td><td>{{.Latency.Count}}</td><td>{{dur .Latency.P50}}</td><td>{{dur .Latency.P90}}</td><td>{{dur .Latency.P99}}</td><td>{{dur .Latency.P999}}</td><td>{{dur .Latency.Max}}</td>
<td>{{if .Check.Pass}}<span class="pass">PASS</span>{{else}}<span class="fail">FAIL</span>{{end}}</td></tr>
{{end}}</table>
</body></html>
`))

func writeHTML(path string, r *report) error {
	type scen struct {
		Index                    int
		Impls                    string
		Throughput, Sync, Memory template.HTML
	}
	var summary bytes.Buffer
	printSummary(&summary, r)
	data := struct {
		Rep       *report
		Summary   string
		Scenarios []scen
		Latency   template.HTML
	}{Rep: r, Summary: strings.TrimSpace(summary.String()), Latency: latencyChart(r.Implementations)}
	for i, s := range r.Scenarios {
		data.Scenarios = append(data.Scenarios, scen{Index: i + 1, Impls: strings.Join(s.Impls, " + "),
			Throughput: throughputChart(s), Sync: syncChart(s), Memory: memoryChart(s)})
	}
	var buf bytes.Buffer
	if err := htmlTmpl.Execute(&buf, data); err != nil {
		return err
	}
	return os.WriteFile(path, buf.Bytes(), 0o644)
}
