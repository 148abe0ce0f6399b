package report

import (
	"fmt"
	"time"
)

// Units of a figure or an axis, and how each is spelled: "s" (seconds),
// "bytes", "per_s", "bytes_per_object", "ratio", "count" and "percent";
// anything else is a plain number.

// FmtDuration formats sec seconds: µs, ms or s, with the digits that matter.
func FmtDuration(sec float64) string {
	d := time.Duration(sec * 1e9)
	switch {
	case d == 0:
		return "0"
	case d < 10*time.Microsecond: // CPU per event, say
		return fmt.Sprintf("%.1fµs", sec*1e6)
	case d < time.Millisecond:
		return fmt.Sprintf("%.0fµs", sec*1e6)
	case d < time.Second:
		return fmt.Sprintf("%.1fms", sec*1e3)
	default:
		return fmt.Sprintf("%.2fs", sec)
	}
}

// FmtBytes formats b bytes in B, KiB, MiB or GiB.
func FmtBytes(b float64) string {
	switch {
	case b >= 1<<30:
		return fmt.Sprintf("%.2f GiB", b/(1<<30))
	case b >= 1<<20:
		return fmt.Sprintf("%.1f MiB", b/(1<<20))
	case b >= 1<<10:
		return fmt.Sprintf("%.1f KiB", b/(1<<10))
	}
	return fmt.Sprintf("%.0f B", b)
}

// FmtRate formats r per second.
func FmtRate(r float64) string {
	if r >= 10000 {
		return fmt.Sprintf("%.1fk/s", r/1000)
	}
	return fmt.Sprintf("%.0f/s", r)
}

// FmtValue formats v in unit.
func FmtValue(unit string, v float64) string {
	switch unit {
	case "s":
		return FmtDuration(v)
	case "bytes":
		return FmtBytes(v)
	case "per_s":
		return FmtRate(v)
	case "bytes_per_object":
		return fmt.Sprintf("%.0f B", v)
	case "ratio":
		return fmt.Sprintf("%.2f", v)
	}
	return fmt.Sprintf("%.0f", v)
}

// FmtStat formats s in unit: the value of a single run, else
// "median [min–max]".
func FmtStat(unit string, s Stat) string {
	if len(s.Samples) == 1 {
		return FmtValue(unit, s.Median)
	}
	return fmt.Sprintf("%s [%s–%s]", FmtValue(unit, s.Median), FmtValue(unit, s.Min), FmtValue(unit, s.Max))
}

// FmtCount formats a count, whole thousands and millions as 10k and 1M.
func FmtCount(n int) string {
	switch {
	case n >= 1000000 && n%1000000 == 0:
		return fmt.Sprintf("%dM", n/1000000)
	case n >= 1000 && n%1000 == 0:
		return fmt.Sprintf("%dk", n/1000)
	}
	return fmt.Sprint(n)
}

// FmtRatio shows two decimals, or two significant digits below 0.1.
func FmtRatio(x float64) string {
	if x < 0.1 {
		return fmt.Sprintf("%.2g", x)
	}
	return fmt.Sprintf("%.2f", x)
}
