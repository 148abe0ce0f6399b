package report

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/shardinformer/shardinformer/cmd/loadgen/internal/plot"
)

// FinishChart drops c's empty series, gives it a non-nil Bars and labels
// its axes' ticks (TickLabel).
func FinishChart(c *plot.Chart) {
	c.Series = slices.DeleteFunc(c.Series, func(s plot.Series) bool { return len(s.Points) == 0 })
	if c.Bars == nil {
		c.Bars = []plot.Bar{}
	}
	for _, a := range []*plot.Axis{&c.X, &c.Y} {
		a.Labels = []string{}
		for _, t := range a.Ticks {
			a.Labels = append(a.Labels, TickLabel(a.Unit, t))
		}
	}
}

// TickLabel formats a tick value in unit (the page has the same rules).
func TickLabel(unit string, v float64) string {
	switch unit {
	case "percent":
		return fmt.Sprintf("%g%%", v)
	case "count":
		return FmtCount(int(v))
	case "per_s":
		if v >= 1000 {
			return fmt.Sprintf("%gk/s", v/1000)
		}
		return fmt.Sprintf("%g/s", v)
	case "s":
		switch {
		case v == 0:
			return "0"
		case v < 1e-3:
			return fmt.Sprintf("%gµs", math.Round(v*1e9)/1e3)
		case v < 1:
			return fmt.Sprintf("%gms", math.Round(v*1e6)/1e3)
		}
		return fmt.Sprintf("%gs", v)
	case "bytes":
		for _, u := range []struct {
			n    float64
			name string
		}{{1 << 30, "GiB"}, {1 << 20, "MiB"}, {1 << 10, "KiB"}} {
			if v >= u.n {
				return fmt.Sprintf("%g %s", math.Round(v/u.n*100)/100, u.name)
			}
		}
		return fmt.Sprintf("%g B", v)
	}
	return FmtValue(unit, v)
}

// CheckAxis checks a finished axis (FinishChart): its ticks labelled, inside
// its range, no label repeated, and round: on a log axis 1, 2 or 5 × 10^k; on
// a linear one evenly spaced by a step of 1, 2 or 5 × 10^k (for bytes, of a
// power of 1024), each tick a whole multiple of the step. Percent axes have
// fixed ticks (0, 25, 50, 75, 90, 100) and are checked for the first two only.
func CheckAxis(a plot.Axis) error {
	if len(a.Ticks) < 2 || len(a.Labels) != len(a.Ticks) || a.Ticks[0] < a.Min*(1-1e-9)-1e-12 || a.Ticks[len(a.Ticks)-1] > a.Max*(1+1e-9)+1e-12 {
		return fmt.Errorf("axis %q ticks %v labels %v in [%v, %v]", a.Label, a.Ticks, a.Labels, a.Min, a.Max)
	}
	var errs []error
	for i := 1; i < len(a.Labels); i++ {
		if a.Labels[i] == a.Labels[i-1] {
			errs = append(errs, fmt.Errorf("axis %q repeats tick label %q", a.Label, a.Labels[i]))
		}
	}
	if a.Unit == "percent" {
		return errors.Join(errs...)
	}
	if a.Log {
		for _, v := range a.Ticks {
			if !isRoundMantissa(v) {
				errs = append(errs, fmt.Errorf("log axis %q tick %v is not 1, 2 or 5 × 10^k", a.Label, v))
			}
		}
		return errors.Join(errs...)
	}
	step := a.Ticks[1] - a.Ticks[0]
	norm := step
	if a.Unit == "bytes" { // in the axis's binary unit: 0.5 GiB is round
		base := 1.0
		for base*1024 <= a.Max {
			base *= 1024
		}
		norm /= base
	}
	if !isRoundMantissa(norm) {
		errs = append(errs, fmt.Errorf("axis %q step %v is not round", a.Label, step))
	}
	for i, v := range a.Ticks {
		if k := v / step; math.Abs(k-math.Round(k)) > 1e-6 || (i > 0 && math.Abs(v-a.Ticks[i-1]-step) > step*1e-6) {
			errs = append(errs, fmt.Errorf("axis %q tick %v (%s) is off the %v grid", a.Label, v, a.Labels[i], step))
		}
	}
	return errors.Join(errs...)
}

// isRoundMantissa reports whether v is 1, 2 or 5 × 10^k.
func isRoundMantissa(v float64) bool {
	if v <= 0 {
		return false
	}
	m := v / math.Pow(10, math.Floor(math.Log10(v)+1e-9))
	for _, r := range []float64{1, 2, 5, 10} {
		if math.Abs(m-r) < 1e-6 {
			return true
		}
	}
	return false
}

// Rates resamples a cumulative count (points t, count) into a rate per
// window of w seconds on [from, to): only whole windows with samples at
// both ends, so the line does not fall to zero at a partial last window.
func Rates(pts [][2]float64, from, to, w float64) [][2]float64 {
	if len(pts) < 2 {
		return nil
	}
	at := func(t float64) float64 { // linear interpolation of the count at t
		i, _ := slices.BinarySearchFunc(pts, t, func(p [2]float64, t float64) int { return cmp.Compare(p[0], t) })
		switch {
		case i == 0:
			return pts[0][1]
		case i >= len(pts):
			return pts[len(pts)-1][1]
		}
		a, b := pts[i-1], pts[i]
		if b[0] == a[0] {
			return b[1]
		}
		return a[1] + (b[1]-a[1])*(t-a[0])/(b[0]-a[0])
	}
	to = math.Min(to, pts[len(pts)-1][0])
	from = math.Max(from, pts[0][0])
	var out [][2]float64
	for t := from; t+w <= to+1e-9; t += w {
		out = append(out, [2]float64{t + w - from, (at(t+w) - at(t)) / w})
	}
	return out
}

// WindowFor returns the rate window for a span of s seconds: 1 s, shorter
// for short spans (at least two sampling periods), longer beyond 200 s.
func WindowFor(s float64) float64 {
	return math.Max(0.2, math.Min(math.Max(1, s/200), s/10))
}
