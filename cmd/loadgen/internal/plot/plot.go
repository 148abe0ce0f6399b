package plot

import "math"

// Chart is one chart of the HTML report, with its data and axes (ticks
// included) computed here, so that the page only draws and the tests can
// check every chart without a browser.
type Chart struct {
	ID     string   `json:"id"`
	Title  string   `json:"title"`
	Kind   string   `json:"kind"` // "line" or "bars"
	X      Axis     `json:"x"`
	Y      Axis     `json:"y"`
	Series []Series `json:"series"` // kind line
	Bars   []Bar    `json:"bars"`   // kind bars
	Note   string   `json:"note,omitempty"`
}

// Axis is a chart axis: its range and round ticks. Unit tells the page how
// to label ticks: "s", "bytes", "per_s", "count", "percent".
type Axis struct {
	Label string    `json:"label"`
	Unit  string    `json:"unit"`
	Log   bool      `json:"log"`
	Min   float64   `json:"min"`
	Max   float64   `json:"max"`
	Ticks []float64 `json:"ticks"`
	// Labels are the ticks' labels, formatted in Unit.
	Labels []string `json:"labels"`
}

// Series is one line of a line chart.
type Series struct {
	Name   string       `json:"name"`
	Impl   string       `json:"impl"` // colour key: an implementation or "churn"
	Points [][2]float64 `json:"points"`
}

// Bar is one bar: a median with its min–max whisker.
type Bar struct {
	Name  string  `json:"name"`
	Impl  string  `json:"impl"`
	Value float64 `json:"value"`
	Lo    float64 `json:"lo"`
	Hi    float64 `json:"hi"`
}

// niceStep returns a round step (1, 2 or 5 × 10^k) near span/n.
func niceStep(span float64, n int) float64 {
	raw := span / float64(n)
	if raw <= 0 || math.IsInf(raw, 0) || math.IsNaN(raw) {
		return 1
	}
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*mag >= raw {
			return m * mag
		}
	}
	return 10 * mag
}

// LinearAxis sets a's range to round bounds around [lo, hi] and its ticks to
// about five round values; byte axes step in round binary units (KiB, MiB,
// GiB).
func LinearAxis(a Axis, lo, hi float64) Axis {
	if hi <= lo {
		hi = lo + 1
	}
	base := 1.0
	if a.Unit == "bytes" {
		for base*1024 <= hi {
			base *= 1024
		}
	}
	step := niceStep((hi-lo)/base, 5) * base
	a.Min = math.Floor(lo/step) * step
	a.Max = math.Ceil(hi/step) * step
	a.Ticks = nil
	for v := a.Min; v <= a.Max+step/2; v += step {
		a.Ticks = append(a.Ticks, math.Round(v/step)*step)
	}
	return a
}

// LogAxis sets a's range to whole decades around [lo, hi] (lo > 0), ticked
// at each decade, and at 2× and 5× when the range spans fewer than three.
func LogAxis(a Axis, lo, hi float64) Axis {
	a.Log = true
	lo = math.Max(lo, 1e-9)
	hi = math.Max(hi, lo)
	e0, e1 := math.Floor(math.Log10(lo)), math.Ceil(math.Log10(hi))
	if e1 == e0 {
		e1++
	}
	a.Min, a.Max = math.Pow(10, e0), math.Pow(10, e1)
	a.Ticks = nil
	for e := e0; e <= e1; e++ {
		d := math.Pow(10, e)
		a.Ticks = append(a.Ticks, d)
		if e1-e0 < 3 && e < e1 {
			a.Ticks = append(a.Ticks, 2*d, 5*d)
		}
	}
	return a
}

// bounds returns the range of the series' x and y values.
func bounds(ss []Series) (x0, x1, y0, y1 float64) {
	x0, y0 = math.Inf(1), math.Inf(1)
	x1, y1 = math.Inf(-1), math.Inf(-1)
	for _, s := range ss {
		for _, p := range s.Points {
			x0, x1 = math.Min(x0, p[0]), math.Max(x1, p[0])
			y0, y1 = math.Min(y0, p[1]), math.Max(y1, p[1])
		}
	}
	if math.IsInf(x0, 1) {
		return 0, 1, 0, 1
	}
	return x0, x1, y0, y1
}

// Line completes a line chart's axes from its series: linear from 0
// unless log.
func Line(c Chart) Chart {
	c.Kind = "line"
	x0, x1, y0, y1 := bounds(c.Series)
	if c.X.Log {
		c.X = LogAxis(c.X, x0, x1)
	} else {
		c.X = LinearAxis(c.X, math.Min(0, x0), x1)
	}
	if c.Y.Log {
		c.Y = LogAxis(c.Y, y0, y1)
	} else {
		c.Y = LinearAxis(c.Y, math.Min(0, y0), y1)
	}
	c.Bars = []Bar{}
	return c
}

// Bars completes a bar chart's axes from its bars: linear from 0.
func Bars(c Chart) Chart {
	c.Kind = "bars"
	hi := 0.0
	for _, b := range c.Bars {
		hi = math.Max(hi, b.Hi)
	}
	c.Y = LinearAxis(c.Y, 0, hi)
	c.X.Ticks = []float64{}
	c.Series = []Series{}
	return c
}
