package report_test

import (
	"fmt"

	"github.com/shardinformer/shardinformer/cmd/loadgen/internal/report"
)

func ExampleVerdictOf() {
	ours := report.StatOf([]float64{1.9, 2.1, 2.0})
	theirs := report.StatOf([]float64{3.2, 3.0, 3.1})
	fmt.Println(report.FmtStat("s", ours), "vs", report.FmtStat("s", theirs))
	fmt.Println(report.VerdictOf("lower", ours, theirs))
	// Output:
	// 2.00s [1.90s–2.10s] vs 3.10s [3.00s–3.20s]
	// shardinformer better
}
