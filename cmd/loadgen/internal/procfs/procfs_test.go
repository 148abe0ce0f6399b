package procfs

import (
	"testing"
	"time"
)

func TestParseProcStat(t *testing.T) {
	// Fields 14 and 15 are utime and stime in clock ticks; the command
	// name may contain spaces and parentheses.
	line := "4242 (kube apiserver) (x)) S 1 4242 4242 0 -1 4194560 100 0 0 0 250 75 0 0 20 0 30 0 1000 0 0\n"
	d, err := ParseStat(line)
	if err != nil || d != 3250*time.Millisecond {
		t.Errorf("ParseStat = %v, %v; want 3.25s (325 ticks)", d, err)
	}
	for _, bad := range []string{"", "4242 kube-apiserver S 1", "4242 (a) S 1 2 3", "4242 (a) S 1 4242 4242 0 -1 4194560 100 0 0 0 x 75 0"} {
		if _, err := ParseStat(bad); err == nil {
			t.Errorf("ParseStat(%q): no error", bad)
		}
	}
}
