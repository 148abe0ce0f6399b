package informers_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// Every Go block of the README that follows a line
// "<!-- compiled: PATH -->" is quoted from PATH (relative to the repository
// root), a file the tests compile: its lines, with runs of blanks collapsed,
// appear in PATH in order and contiguously, except where the README has a
// line "// …", which stands for any lines.
func TestREADMESnippets(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(readme), "\n")
	checked := 0
	for i, l := range lines {
		path, ok := strings.CutPrefix(l, "<!-- compiled: ")
		if !ok {
			continue
		}
		path = strings.TrimSuffix(path, " -->")
		if i+1 >= len(lines) || lines[i+1] != "```go" {
			t.Fatalf("README line %d: %q is not followed by a Go block", i+1, l)
		}
		end := slices.Index(lines[i+2:], "```")
		if end < 0 {
			t.Fatalf("README line %d: unterminated Go block", i+2)
		}
		src, err := os.ReadFile(filepath.Join("..", path))
		if err != nil {
			t.Fatal(err)
		}
		if missing := quoted(lines[i+2:i+2+end], strings.Split(string(src), "\n")); missing != "" {
			t.Errorf("README line %d: the snippet is not quoted from %s; from %q on it differs", i+1, path, missing)
		}
		checked++
	}
	if checked < 2 {
		t.Fatalf("%d compiled snippets in the README, want the factory's and controller-runtime's", checked)
	}
}

// quoted reports the first snippet line from which snippet is not found in
// src ("" if it is).
func quoted(snippet, src []string) string {
	src = normalized(src)
	pos := 0
	for chunk := range strings.SplitSeq(strings.Join(normalized(snippet), "\n"), "// …") {
		c := normalized(strings.Split(chunk, "\n"))
		if len(c) == 0 {
			continue
		}
		at := indexOf(src[pos:], c)
		if at < 0 {
			return c[0]
		}
		pos += at + len(c)
	}
	return ""
}

// normalized drops blank lines and collapses runs of blanks.
func normalized(lines []string) []string {
	var out []string
	for _, l := range lines {
		if f := strings.Fields(l); len(f) > 0 {
			out = append(out, strings.Join(f, " "))
		}
	}
	return out
}

func indexOf(s, sub []string) int {
	for i := 0; i+len(sub) <= len(s); i++ {
		if slices.Equal(s[i:i+len(sub)], sub) {
			return i
		}
	}
	return -1
}
