package apisim

import (
	"strconv"
	"strings"
)

// negotiate picks the response encoding for an Accept header the way the
// API server does: the acceptable media range with the highest q-value
// wins, ties going to the earlier one; "*/*" and "application/*" mean JSON;
// ranges asking for a transformed form (as=Table, …) or an unknown type
// are skipped. An empty header means JSON. ok is false if nothing in the
// header is acceptable (406).
func negotiate(accept string) (ct contentType, ok bool) {
	if strings.TrimSpace(accept) == "" {
		return ctJSON, true
	}
	best, bestQ := ctJSON, -1.0
	for clause := range strings.SplitSeq(accept, ",") {
		parts := strings.Split(clause, ";")
		mt := strings.ToLower(strings.TrimSpace(parts[0]))
		q := 1.0
		transformed := false
		for _, p := range parts[1:] {
			k, v, _ := strings.Cut(strings.TrimSpace(p), "=")
			switch strings.ToLower(strings.TrimSpace(k)) {
			case "q":
				f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
				if err != nil {
					f = 0
				}
				q = f
			case "as", "g", "v":
				// Conversion to another kind (Table, PartialObjectMetadata,
				// aggregated discovery) is not served here.
				transformed = true
			}
		}
		if transformed || q <= 0 {
			continue
		}
		var c contentType
		switch mt {
		case "application/json", "application/*", "*/*":
			c = ctJSON
		case ContentTypeProtobuf:
			c = ctProtobuf
		default:
			continue
		}
		if q > bestQ {
			best, bestQ = c, q
		}
	}
	return best, bestQ > 0
}
