package main

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"os"
)

// reportPage is the HTML report: a page whose embedded script renders the
// report's JSON, placed at the page's one "{{.}}". Self-contained: no
// network, no external script or style.
//
//go:embed report.html
var reportPage []byte

// renderHTML returns the HTML report of r. The JSON is marshalled with
// HTML escaping (<, > and & as \u003c, \u003e, \u0026), so no byte of it can
// end the script element that holds it.
func renderHTML(r *report) ([]byte, error) {
	data, err := json.Marshal(r)
	if err != nil {
		return nil, err
	}
	return bytes.Replace(reportPage, []byte("{{.}}"), data, 1), nil
}

func writeHTML(path string, r *report) error {
	b, err := renderHTML(r)
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o644)
}
