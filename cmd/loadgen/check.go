package main

import (
	"fmt"
	"slices"
)

// checkResult compares an informer's cache and its handlers' views with the
// server's final state.
type checkResult struct {
	Pass              bool     `json:"pass"`
	ServerObjects     int      `json:"server_objects"`
	CacheObjects      int      `json:"cache_objects"`
	CacheMismatches   int      `json:"cache_mismatches"`   // keys missing, extra or at another resourceVersion
	HandlerMismatches int      `json:"handler_mismatches"` // the same, summed over handlers or the reconciler's last reconciled versions
	Details           []string `json:"details,omitempty"`  // the first few mismatches
}

const maxDetails = 5

// check compares c's cache, and its handlers' or reconciler's views, with
// want (key → resourceVersion).
func check(c *client, want map[string]string) checkResult {
	res := checkResult{ServerObjects: len(want)}
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
