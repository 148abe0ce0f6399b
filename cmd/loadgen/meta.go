package main

import (
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"strings"
)

// metadata says what ran where: enough to reproduce a report or to tell two
// apart.
type metadata struct {
	CommandLine []string `json:"command_line"`
	Commit      string   `json:"commit"` // "" if unknown
	Dirty       bool     `json:"dirty"`  // uncommitted changes in the work tree
	GoVersion   string   `json:"go_version"`
	GOOS        string   `json:"goos"`
	GOARCH      string   `json:"goarch"`
	CPUModel    string   `json:"cpu_model"`
	NumCPU      int      `json:"num_cpu"`
	GOMAXPROCS  int      `json:"gomaxprocs"`
	MemoryBytes uint64   `json:"memory_bytes"` // the machine's
	// MemoryLimit is the Go soft memory limit in force in the parent
	// process: GOMEMLIMIT, or half the machine's memory (math.MaxInt64 =
	// none); a child's is its result's go_memory_limit_bytes (below
	// --child-mem-limit: fit.go).
	MemoryLimit int64 `json:"memory_limit_bytes"`
	// BurnIterationsPerSecond calibrates --reconcile-work and --handler-work.
	BurnIterationsPerSecond float64  `json:"burn_iterations_per_second"`
	MainModule              module   `json:"main_module"`
	Modules                 []module `json:"modules"` // every dependency in the binary
}

type module struct {
	Path    string `json:"path"`
	Version string `json:"version"`
}

func collectMetadata(c config, memLimit int64, burnRate float64) metadata {
	md := metadata{CommandLine: c.args, GoVersion: runtime.Version(), GOOS: runtime.GOOS, GOARCH: runtime.GOARCH,
		CPUModel: cpuModel(), NumCPU: runtime.NumCPU(), GOMAXPROCS: runtime.GOMAXPROCS(0), MemoryBytes: memTotal(),
		MemoryLimit: memLimit, BurnIterationsPerSecond: burnRate, Modules: []module{}}
	if bi, ok := debug.ReadBuildInfo(); ok {
		md.MainModule = module{bi.Main.Path, bi.Main.Version}
		for _, d := range bi.Deps {
			v := d.Version
			if d.Replace != nil {
				v += " => " + d.Replace.Path + " " + d.Replace.Version
			}
			md.Modules = append(md.Modules, module{d.Path, v})
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
