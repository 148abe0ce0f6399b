package main

import (
	"fmt"
	"github.com/shardinformer/shardinformer/cmd/loadgen/internal/report"
	"slices"
)

const maxDetails = 5

// check compares c's cache, and its handlers' or reconciler's views, with
// want (key → resourceVersion).
func check(c *client, want map[string]string) report.Check {
	res := report.Check{ServerObjects: len(want)}
	note := func(format string, args ...any) {
		if len(res.Details) < maxDetails {
			res.Details = append(res.Details, fmt.Sprintf(format, args...))
		}
	}
	// Key by key, not List(): a compact store decodes what it returns, and
	// a List of a million decoded pods would take gigabytes at once.
	got := map[string]string{}
	store := c.inf.GetStore()
	for _, key := range store.ListKeys() {
		obj, ok, err := store.GetByKey(key)
		switch {
		case err != nil:
			note("cache: %s: %v", key, err)
			res.CacheMismatches++
		case ok:
			got[key] = accessor(obj).GetResourceVersion()
		}
	}
	res.CacheObjects = len(got)
	res.CacheMismatches += diff(want, got, func(s string) { note("cache: %s", s) })
	for i, h := range c.handlers {
		res.HandlerMismatches += diff(want, h.rv.snapshot(), func(s string) { note("handler %d: %s", i, s) })
	}
	if c.ctl != nil {
		res.HandlerMismatches += diff(want, c.ctl.reconciled.snapshot(), func(s string) { note("reconciled: %s", s) })
	}
	res.Pass = res.CacheMismatches == 0 && res.HandlerMismatches == 0
	return res
}

// diff counts keys of want missing from got or at another version, and keys
// of got absent from want, describing the first few (in key order) with note.
func diff(want, got map[string]string, note func(string)) int {
	var bad []string
	for k, w := range want {
		g, ok := got[k]
		switch {
		case !ok:
			bad = append(bad, fmt.Sprintf("%s missing (server has resourceVersion %s)", k, w))
		case g != w:
			bad = append(bad, fmt.Sprintf("%s at resourceVersion %s, server has %s", k, g, w))
		}
	}
	for k, g := range got {
		if _, ok := want[k]; !ok {
			bad = append(bad, fmt.Sprintf("%s (resourceVersion %s) deleted on the server but still present", k, g))
		}
	}
	slices.Sort(bad)
	for _, b := range bad[:min(len(bad), maxDetails)] {
		note(b)
	}
	return len(bad)
}
