package main

import (
	"github.com/shardinformer/shardinformer/cmd/loadgen/internal/procfs"
	"github.com/shardinformer/shardinformer/cmd/loadgen/internal/report"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"strings"
)

func collectMetadata(c config, memLimit int64, burnRate float64) report.Metadata {
	md := report.Metadata{CommandLine: c.args, GoVersion: runtime.Version(), GOOS: runtime.GOOS, GOARCH: runtime.GOARCH,
		CPUModel: cpuModel(), NumCPU: runtime.NumCPU(), GOMAXPROCS: runtime.GOMAXPROCS(0), MemoryBytes: procfs.MemTotal(),
		MemoryLimit: memLimit, BurnIterationsPerSecond: burnRate, Modules: []report.Module{}}
	if bi, ok := debug.ReadBuildInfo(); ok {
		md.MainModule = report.Module{Path: bi.Main.Path, Version: bi.Main.Version}
		for _, d := range bi.Deps {
			v := d.Version
			if d.Replace != nil {
				v += " => " + d.Replace.Path + " " + d.Replace.Version
			}
			md.Modules = append(md.Modules, report.Module{Path: d.Path, Version: v})
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				md.Commit = s.Value
			case "vcs.modified":
				md.Dirty = s.Value == "true"
			}
		}
	}
	if md.Commit == "" { // built without VCS stamping (go run, -buildvcs=false): ask git
		if out, err := exec.Command("git", "rev-parse", "HEAD").Output(); err == nil {
			md.Commit = strings.TrimSpace(string(out))
			if st, err := exec.Command("git", "status", "--porcelain", "--untracked-files=no").Output(); err == nil {
				md.Dirty = len(strings.TrimSpace(string(st))) > 0
			}
		}
	}
	return md
}

// cpuModel reads the first "model name" of /proc/cpuinfo ("" if unknown).
func cpuModel() string {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return ""
}
