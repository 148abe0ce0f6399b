package report

import (
	"math"
	"slices"
)

// Stat is the runs of one figure: median, min, max and every sample.
type Stat struct {
	Text    string    `json:"text"` // median [min–max], formatted in the figure's unit
	Median  float64   `json:"median"`
	Min     float64   `json:"min"`
	Max     float64   `json:"max"`
	Samples []float64 `json:"samples"`
}

// StatOf is the Stat of xs (at least one sample), without its Text. It
// keeps xs as the samples.
func StatOf(xs []float64) Stat {
	s := slices.Clone(xs)
	slices.Sort(s)
	m := s[len(s)/2]
	if len(s)%2 == 0 {
		m = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return Stat{Median: m, Min: s[0], Max: s[len(s)-1], Samples: xs}
}

// Verdicts of shardinformer's runs against client-go's (VerdictOf).
const (
	VerdictOursBetter   = "shardinformer better"
	VerdictOursLikely   = "shardinformer likely better"
	VerdictTie          = "no clear difference"
	VerdictTheirsLikely = "client-go likely better"
	VerdictTheirsBetter = "client-go better"
)

// ComparisonWords are Compare's results, from -2 to 2 (index n+2), as the
// report spells them in vs_client_go.
var ComparisonWords = [5]string{"worse", "likely worse", VerdictTie, "likely better", "better"}

// VerdictOf is Compare of shardinformer's runs with client-go's, in words.
func VerdictOf(better string, ours, theirs Stat) string {
	return [5]string{VerdictTheirsBetter, VerdictTheirsLikely, VerdictTie, VerdictOursLikely, VerdictOursBetter}[Compare(better, ours, theirs)+2]
}

// Compare compares x's runs with base's, better being "lower" or "higher":
// 2 (better) when the medians differ by more than 5% and the min–max ranges
// do not overlap, 1 (likely better) when the medians differ by more than 10%
// but the ranges overlap (or there is one run each), 0 when there is no clear
// difference, and -1 and -2 the same the other way round.
func Compare(better string, x, base Stat) int {
	ahead := x.Median < base.Median
	if better != "lower" {
		ahead = x.Median > base.Median
	}
	hi, lo := math.Max(x.Median, base.Median), math.Min(x.Median, base.Median)
	if hi == 0 {
		return 0
	}
	diff := (hi - lo) / hi
	separate := x.Max < base.Min || base.Max < x.Min
	n := 0
	switch {
	case diff > 0.05 && separate && len(x.Samples) > 1 && len(base.Samples) > 1:
		n = 2
	case diff > 0.10:
		n = 1
	}
	if !ahead {
		n = -n
	}
	return n
}
