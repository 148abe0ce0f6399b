// Package plot is the geometry of the HTML report's charts: a [Chart] holds
// its series or bars and its axes, ticks included, computed here so that
// report.html only draws and the tests can check every chart without a
// browser. [Line] and [Bars] complete a chart's axes from its data
// ([LinearAxis]: round steps, binary units for bytes; [LogAxis]: decades).
// Tick labels (the report's number formats) are the caller's. The package
// knows nothing of trials or implementations; its types are plain values.
//
//	c := plot.Line(plot.Chart{ID: "rss", Series: series, Y: plot.Axis{Label: "RSS", Unit: "bytes"}})
package plot
