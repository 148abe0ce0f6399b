// Package report is loadgen's report: the document report.json holds
// ([Report]; cmd/loadgen/report.schema.json describes the layout, versioned
// by [SchemaVersion]), its rendering as JSON and as the self-contained HTML
// page that draws it ([WriteJSON], [HTML], [WriteHTML]), how the report
// states a figure, and what it derives from the trials.
//
// The schema: the workload's [Settings] and each stack's [ImplInfo]; per
// [Trial], each implementation's [ImplResult] (sync, latency, CPU, heap, the
// [Check] against the server, its [ListWatchRequests], its [TimelinePoint]s
// and, in a soak, its [SoakResult]), the churn's counts and the trial's
// fault proxy; the compared [Figure]s, [ScalePoint]s and the run-by-run
// [RunComparison]; the machine's [Metadata]; the trials that [DidNotFit];
// the replicas scenario's section ([Replicas]) and the soak's ([Soak]).
// Durations are seconds, sizes bytes. They are plain data with JSON tags
// (a child process sends its ImplResult to its parent as JSON); a copy
// shares its maps and slices.
//
// Stating a figure: the runs of one figure as a [Stat] (median, min, max,
// every sample), the verdict of one implementation's runs against another's
// ([Compare], [VerdictOf]), values in their units as the summary, the
// headline and the charts' ticks spell them ([FmtValue], [FmtStat],
// [TickLabel]), a cumulative count as a rate per window ([Rates]), and a
// chart finished for the page ([FinishChart], checked by [CheckAxis]). A
// Report answers which results an implementation has at a size
// ([Report.Results], [Report.MedianRun], [Report.UnfitAt]).
//
// Deriving: the command fills in the trials and calls [Finish], which sums
// the server's cost, computes every figure at every size from the results
// (figureDefs: which figure applies to which scenario, how it is read from
// an [ImplResult]), compares each implementation with client-go's, splits
// the 2×2 of cores and decoders ([Decomposition]), compares run by run,
// draws the charts and writes the headline; [AddSoak] adds the soak's
// section from each result's fits ([AnalyseSoak]: least squares for the
// heap, Theil–Sen for the goroutines), [SummarizeReplicas] the replicas'.
// [PrintSummary], [PrintFaults] and [PrintSoak] write the text summary.
// The names the report compares and selects by — implementations,
// scenarios, modes, CPU scopes — are its own constants ([ImplOurs],
// [ScenarioScale], [ModeProcess], [CPUScopeProcess]), which the command's
// flags use.
//
// It knows nothing of loadgen's flags, of the trials' machinery or of the
// stacks under test: the command measures and fills the values in.
//
//	s := report.StatOf([]float64{1.9, 2.1, 2.0})
//	s.Text = report.FmtStat("s", s) // "2.00s [1.90s–2.10s]"
//	v := report.VerdictOf("lower", ours, theirs)
package report
