// Package selfstat measures the process it runs in: CPU time and where it
// went (getrusage and the Go runtime's GC estimate), heap readings taken
// from runtime/metrics without stopping the world, the peaks of heap and
// resident set, and CPU split by the pprof goroutine labels loadgen sets.
// Every loadgen process — parent, implementation child, replica — measures
// itself with it; what is measured of another process by its pid is in
// package procfs.
//
// Readings are values: a phase's figure is the difference of two readings
// taken at its ends.
//
//	before := selfstat.ReadCPUSplit()
//	work()
//	d := selfstat.ReadCPUSplit().Sub(before)
//	fmt.Println(d.CPU, d.GCCPU(), d.Faults)
//
// Peaks is safe for concurrent use; everything else is a function of the
// process's state at the instant it is called.
package selfstat
