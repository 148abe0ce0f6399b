package faults

import (
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/rest"
)

func TestParseSpec(t *testing.T) {
	c, err := ParseSpec("cut=0.02,stall=0.01:2s,500=0.01,429=0.01:3s:max=5,410=0.005:every=1s,seed=7,max=50,bytes=64Ki")
	if err != nil {
		t.Fatal(err)
	}
	want := map[Kind]Rule{
		Cut:             {P: 0.02},
		Stall:           {P: 0.01, Duration: 2 * time.Second},
		InternalError:   {P: 0.01},
		TooManyRequests: {P: 0.01, Duration: 3 * time.Second, Max: 5},
		Gone:            {P: 0.005, Every: time.Second},
	}
	for k, r := range want {
		if c.Rules[k] != r {
			t.Errorf("%s: rule %+v, want %+v", k, c.Rules[k], r)
		}
	}
	if c.Seed != 7 || c.Max != 50 || c.Bytes != 64<<10 {
		t.Errorf("seed %d max %d bytes %d, want 7 50 65536", c.Seed, c.Max, c.Bytes)
	}
	// String reads back as the same config.
	back, err := ParseSpec(c.String())
	if err != nil {
		t.Fatalf("ParseSpec(%q): %v", c.String(), err)
	}
	if back.String() != c.String() {
		t.Errorf("round trip: %q, want %q", back.String(), c.String())
	}
	if d, _ := ParseSpec("cut=0.5"); d.Seed != 1 {
		t.Errorf("default seed %d, want 1", d.Seed)
	}
}

// TestParseSpecBadInput: every malformed spec is refused with an error that
// names what is wrong.
func TestParseSpecBadInput(t *testing.T) {
	for _, tc := range []struct{ spec, want string }{
		{"", "empty spec"},
		{"  ", "empty spec"},
		{"seed=7", "names no fault kind"},
		{"cut", "want KIND=P"},
		{"cut=", "want KIND=P"},
		{"=0.1", "want KIND=P"},
		{"drop=0.1", `unknown kind or key "drop"`},
		{"cut=abc", `probability "abc"`},
		{"cut=1.5", "not a number in [0, 1]"},
		{"cut=-0.1", "not a number in [0, 1]"},
		{"cut=NaN", "not a number in [0, 1]"},
		{"cut=0.6,500=0.6", "add up to 1.2"},
		{"cut=0.1,cut=0.2", `"cut" given twice`},
		{"cut=0.1:2s", "applies to stall and 429 only"},
		{"stall=0.1:soon", "want a positive duration"},
		{"stall=0.1:0s", "want a positive duration"},
		{"429=0.1:max=0", "max=\"0\""},
		{"429=0.1:max=x", "max=\"x\""},
		{"410=0.1:every=-1s", "every=\"-1s\""},
		{"410=0.1:foo=1", `unknown option "foo=1"`},
		{"cut=0.1,seed=x", `seed="x"`},
		{"cut=0.1,max=0", "max=\"0\""},
		{"cut=0.1,max=-2", "max=\"-2\""},
		{"cut=0.1,every=fast", `every="fast"`},
		{"cut=0.1,bytes=0", `bytes="0"`},
		{"cut=0.1,bytes=lots", `bytes="lots"`},
	} {
		_, err := ParseSpec(tc.spec)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParseSpec(%q) = %v, want an error containing %q", tc.spec, err, tc.want)
		}
	}
}

// TestNewBadConfig: New refuses what cannot work, naming it.
func TestNewBadConfig(t *testing.T) {
	up := &rest.Config{Host: "http://127.0.0.1:1"}
	for _, tc := range []struct {
		name string
		cfg  Config
		want string
	}{
		{"no upstream", Config{}, "Upstream with a Host is required"},
		{"empty host", Config{Upstream: &rest.Config{}}, "Upstream with a Host is required"},
		{"p above 1", Config{Upstream: up, Rules: map[Kind]Rule{Cut: {P: 2}}}, "not in [0, 1]"},
		{"sum above 1", Config{Upstream: up, Rules: map[Kind]Rule{Cut: {P: 0.7}, Gone: {P: 0.7}}}, "more than 1"},
		{"negative every", Config{Upstream: up, Rules: map[Kind]Rule{Cut: {P: 0.1, Every: -1}}}, "negative duration"},
		{"unknown kind", Config{Upstream: up, Rules: map[Kind]Rule{Kind(9): {P: 0.1}}}, "unknown Kind(9)"},
		{"negative bytes", Config{Upstream: up, Bytes: -1}, "Bytes -1 is negative"},
		{"bad host", Config{Upstream: &rest.Config{Host: "http://[::1"}}, "upstream"},
	} {
		_, err := New(tc.cfg)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: New = %v, want an error containing %q", tc.name, err, tc.want)
		}
	}
}

func TestParseKind(t *testing.T) {
	for _, k := range Kinds() {
		if got, err := ParseKind(k.String()); err != nil || got != k {
			t.Errorf("ParseKind(%q) = %v, %v", k.String(), got, err)
		}
	}
	if _, err := ParseKind("503"); err == nil {
		t.Error("ParseKind(503) succeeded")
	}
	if s := Kind(42).String(); s != "Kind(42)" {
		t.Errorf("Kind(42).String() = %q", s)
	}
}
