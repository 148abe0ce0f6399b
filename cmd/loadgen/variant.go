package main

import (
	"fmt"
	"github.com/shardinformer/shardinformer/cmd/loadgen/internal/report"
	"strings"
)

// Decoders, as the report spells them.
const (
	decoderClientGo = "client-go" // client-go's REST client and protobuf/JSON decoder
	decoderWire     = "wire"      // package wire's parallel, order-keeping ListerWatcher
)

// Diets of the wire decoder, as the report spells them.
const (
	dietNone = "none"
	dietFull = "full" // wire.WithDiet: drop managedFields, intern strings, compact slices
)

// Name suffixes that change a core's decoder or the wire's diet.
const (
	suffixWire            = "+wire"
	suffixClientGoDecoder = "+client-go-decoder"
	suffixDiet            = "+diet"
	suffixNoDiet          = "+no-diet"
	suffixCompact         = "+compact" // ours only: pipeline.WithCompactStore
)

// variant is one implementation under test: a core — the informer and, in
// the controller scenario, its work queue — and the decoder of its
// ListerWatcher, so that a report can set the core's share of a gain apart
// from the decoder's. A core alone uses its default decoder: shardinformer
// the wire, client-go its own; a suffix swaps it.
type variant struct {
	name    string // canonical: the core, then only the suffixes that change its defaults
	core    string // implOurs or implClientGo
	decoder string // decoderWire or decoderClientGo
	diet    bool   // the wire's diet (wire only)
	compact bool   // the compact store (ours only; +compact)
}

// defaultDecoder is the decoder a core uses without a suffix.
func defaultDecoder(core string) string {
	if core == report.ImplOurs {
		return decoderWire
	}
	return decoderClientGo
}

// dietName is the report's name of v's diet ("" without the wire).
func (v variant) dietName() string {
	switch {
	case v.decoder != decoderWire:
		return ""
	case v.diet:
		return dietFull
	}
	return dietNone
}

// parseVariant reads an implementation name: a core, then optionally
// +wire or +client-go-decoder, then optionally +diet or +no-diet (with the
// wire only), which override dietDefault (--diet), then optionally +compact
// (shardinformer only).
func parseVariant(s string, dietDefault bool) (variant, error) {
	v := variant{diet: dietDefault}
	rest := strings.TrimSpace(s)
	for _, core := range []string{report.ImplOurs, report.ImplClientGo} {
		if r, ok := strings.CutPrefix(rest, core); ok && (r == "" || r[0] == '+') {
			v.core, rest = core, r
			break
		}
	}
	if v.core == "" {
		return v, fmt.Errorf("%q does not start with shardinformer or client-go", s)
	}
	v.decoder = defaultDecoder(v.core)
	if r, ok := strings.CutPrefix(rest, suffixWire); ok {
		v.decoder, rest = decoderWire, r
	} else if r, ok := strings.CutPrefix(rest, suffixClientGoDecoder); ok {
		v.decoder, rest = decoderClientGo, r
	}
	if r, ok := strings.CutPrefix(rest, suffixNoDiet); ok {
		v.diet, rest = false, r
		if v.decoder != decoderWire {
			return v, fmt.Errorf("%q: the diet is the wire decoder's", s)
		}
	} else if r, ok := strings.CutPrefix(rest, suffixDiet); ok {
		v.diet, rest = true, r
		if v.decoder != decoderWire {
			return v, fmt.Errorf("%q: the diet is the wire decoder's", s)
		}
	}
	if r, ok := strings.CutPrefix(rest, suffixCompact); ok {
		v.compact, rest = true, r
		if v.core != report.ImplOurs {
			return v, fmt.Errorf("%q: the compact store is shardinformer's", s)
		}
	}
	if rest != "" {
		return v, fmt.Errorf("%q: unknown suffix %q (want %s or %s, then %s or %s, then %s)", s, rest, suffixWire, suffixClientGoDecoder, suffixDiet, suffixNoDiet, suffixCompact)
	}
	if v.decoder != decoderWire {
		v.diet = false
	}
	v.name = v.core
	switch {
	case v.decoder != defaultDecoder(v.core) && v.decoder == decoderWire:
		v.name += suffixWire
	case v.decoder != defaultDecoder(v.core):
		v.name += suffixClientGoDecoder
	}
	if v.decoder == decoderWire && v.diet != dietDefault {
		if v.diet {
			v.name += suffixDiet
		} else {
			v.name += suffixNoDiet
		}
	}
	if v.compact {
		v.name += suffixCompact
	}
	return v, nil
}

// parseImpls reads --impl: "" or "both" (shardinformer and client-go; the
// scale and replicas scenarios: shardinformer), "all" (the 2×2 of cores and decoders), or
// a comma-separated list of implementation names. It returns the canonical
// names in run order and each one's variant.
func parseImpls(s, scenario string, dietDefault bool) ([]string, map[string]variant, error) {
	var names []string
	switch s {
	case "":
		names = []string{report.ImplOurs, report.ImplClientGo}
		if scenario == report.ScenarioScale || scenario == report.ScenarioReplicas {
			names = []string{report.ImplOurs}
		}
	case "both":
		names = []string{report.ImplOurs, report.ImplClientGo}
	case "all":
		names = report.Decomposition
	default:
		names = strings.Split(s, ",")
	}
	var out []string
	vs := map[string]variant{}
	for _, n := range names {
		v, err := parseVariant(n, dietDefault)
		if err != nil {
			return nil, nil, fmt.Errorf("--impl: %w", err)
		}
		if _, dup := vs[v.name]; dup {
			return nil, nil, fmt.Errorf("--impl %q: %s twice", s, v.name)
		}
		vs[v.name] = v
		out = append(out, v.name)
	}
	return out, vs, nil
}
