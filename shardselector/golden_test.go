package shardselector

import (
	"compress/gzip"
	"encoding/json"
	"os"
	"strings"
	"testing"
)

// golden is testdata/golden.json.gz, written by testdata/gen from
// kube-apiserver v1.36.3's own functions.
type golden struct {
	Source string `json:"source"`
	Hashes []struct {
		Value string `json:"value"`
		Hash  string `json:"hash"`
	} `json:"hashes"`
	Cases []struct {
		Expr   string      `json:"expr"`
		Error  string      `json:"error"`
		Field  string      `json:"field"`
		Ranges [][2]string `json:"ranges"`
		String string      `json:"string"`
	} `json:"cases"`
}

func loadGolden(t testing.TB) golden {
	t.Helper()
	f, err := os.Open("testdata/golden.json.gz")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	var g golden
	if err := json.NewDecoder(zr).Decode(&g); err != nil {
		t.Fatal(err)
	}
	return g
}

// celParseError is the API server's prefix for errors cel-go reports; the
// text after it is cel-go's (ANTLR's) and is not reproduced.
const celParseError = "CEL parse error: "

// TestGolden checks Parse against the API server's verdict on every
// expression of the golden file: the same ranges and String() for the
// accepted ones, the same message for the rejected ones (only the
// "CEL parse error: " category for syntax errors).
func TestGolden(t *testing.T) {
	g := loadGolden(t)
	if len(g.Cases) < 1000 {
		t.Fatalf("golden file has %d cases", len(g.Cases))
	}
	failures := 0
	for _, c := range g.Cases {
		sel, err := Parse(c.Expr)
		fail := func(format string, args ...any) {
			t.Helper()
			failures++
			if failures <= 40 {
				t.Errorf("Parse(%.300q): "+format, append([]any{c.Expr}, args...)...)
			}
		}
		switch {
		case c.Error == "" && err != nil:
			fail("error %q; the API server accepts it as %s", err, c.String)
		case c.Error == "":
			if sel.String() != c.String || sel.Field != c.Field || len(sel.Ranges) != len(c.Ranges) {
				fail("got %s; want %s", sel, c.String)
			}
		case err == nil:
			fail("accepted as %s; the API server rejects it: %s", sel, c.Error)
		case strings.HasPrefix(c.Error, celParseError):
			if !strings.HasPrefix(err.Error(), celParseError) {
				fail("error %q; want a CEL parse error like the API server's %q", err, c.Error)
			}
		case err.Error() != c.Error:
			fail("error %q; want %q", err, c.Error)
		}
	}
	if failures > 0 {
		t.Errorf("%d of %d golden cases differ", failures, len(g.Cases))
	}
}
