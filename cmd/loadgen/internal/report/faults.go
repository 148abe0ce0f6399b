package report

import (
	"fmt"
	"github.com/shardinformer/shardinformer/faults"
	"io"
	"strings"
)

// PrintFaults writes each trial's faults and every implementation's
// relists, watch restarts and time to converge after the faults stopped.
func PrintFaults(w io.Writer, r *Report) {
	if r.Settings.Faults == "" {
		return
	}
	fmt.Fprintf(w, "\nFaults (%s); injection stops at the churn's end:\n", r.Settings.Faults)
	for _, tr := range r.Trials {
		if tr.Faults == nil {
			continue
		}
		var kinds []string
		for _, k := range faults.Kinds() {
			kinds = append(kinds, fmt.Sprintf("%s=%d", k, tr.Faults.Injected[k.String()]))
		}
		fmt.Fprintf(w, "  %d pods, run %d: %d requests, injected %s (vetoed %d)\n", tr.Pods, tr.Run, tr.Faults.Requests, strings.Join(kinds, " "), tr.Faults.Vetoed)
		for _, res := range tr.Results {
			conv := "did not converge"
			if res.ConvergeAfterFaults != nil {
				conv = fmt.Sprintf("converged %.2fs after the faults stopped", *res.ConvergeAfterFaults)
			}
			rq := res.Requests
			if rq == nil {
				rq = &ListWatchRequests{}
			}
			fmt.Fprintf(w, "    %-34s relists %d, watch restarts %d (lists %d, watches %d, watch-lists %d); %s\n",
				res.Impl, rq.Relists, rq.WatchRestarts, rq.Lists, rq.Watches, rq.WatchLists, conv)
		}
	}
}
