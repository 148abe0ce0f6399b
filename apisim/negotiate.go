package apisim

import (
	"strings"

	"github.com/munnerz/goautoneg"
)

// format is a negotiated response representation.
type format struct {
	ct   contentType
	view *view // the resource's full view, or a PartialObjectMetadata view
	// convert is the transformation asked for: "", asPartial or
	// asPartialList.
	convert string
}

// The transformations served (Accept: …;as=…;g=meta.k8s.io;v=v1).
const (
	asPartial     = "PartialObjectMetadata"
	asPartialList = "PartialObjectMetadataList"
)

// mediaType is one of the API server's serializers, in its order of
// preference. YAML is listed so that negotiation visits the serializers as
// the API server does, but it is not served: a clause that would pick it
// is skipped.
type mediaType struct {
	typ, subtype string
	ct           contentType
	served       bool
	stream       bool // has a stream (watch) serializer
}

var serverMediaTypes = []mediaType{
	{typ: "application", subtype: "json", ct: ctJSON, served: true, stream: true},
	{typ: "application", subtype: "yaml"},
	{typ: "application", subtype: "vnd.kubernetes.protobuf", ct: ctProtobuf, served: true, stream: true},
}

// negotiate picks the response format for an Accept header as the API
// server does for a request to res (k8s.io/apiserver handlers/negotiation:
// NegotiateMediaTypeOptions with the request scope's restrictions): the
// clauses in goautoneg's order (q-value, then specificity), and for each
// the serializers that match it, in the server's order; the first whose
// parameters are acceptable wins. Parameters: as/g/v ask for a
// transformation (only PartialObjectMetadata and PartialObjectMetadataList
// of meta.k8s.io v1 and v1beta1 are served; Table is not); stream must be
// "watch"; sv must be "v1". For a custom resource protobuf is acceptable
// only with a transformation. An empty header means JSON. ok is false if
// nothing is acceptable (406).
func negotiate(accept string, res *apiResource) (f format, ok bool) {
	return negotiateWith(accept, func(m mediaType, p params) (format, bool) {
		if p.sv != "" && p.sv != "v1" {
			return format{}, false
		}
		if !p.convert {
			if res.custom && m.ct == ctProtobuf {
				return format{}, false
			}
			return format{ct: m.ct, view: res.full}, true
		}
		if p.group != "meta.k8s.io" || (p.kind != asPartial && p.kind != asPartialList) {
			return format{}, false
		}
		v, ok := metaViews[p.version]
		return format{ct: m.ct, view: v, convert: p.kind}, ok
	})
}

// negotiateStatus picks the encoding of an error Status the way the API
// server's ErrorNegotiated does: no transformations, no server versions,
// and JSON if nothing is acceptable.
func negotiateStatus(accept string) contentType {
	f, ok := negotiateWith(accept, func(m mediaType, p params) (format, bool) {
		return format{ct: m.ct}, !p.convert && p.sv == ""
	})
	if !ok {
		return ctJSON
	}
	return f.ct
}

// params are the media type parameters negotiation looks at.
type params struct {
	convert              bool // any of as, g, v given
	kind, group, version string
	sv                   string
}

func negotiateWith(accept string, allow func(mediaType, params) (format, bool)) (format, bool) {
	if accept == "" {
		return allow(serverMediaTypes[0], params{})
	}
	for _, clause := range goautoneg.ParseAccept(accept) {
		for _, m := range serverMediaTypes {
			if !(clause.Type == "*" && clause.SubType == "*") &&
				!(clause.Type == m.typ && (clause.SubType == m.subtype || clause.SubType == "*")) {
				continue
			}
			var p params
			streamOK := true
			for k, v := range clause.Params {
				switch k {
				case "as":
					p.convert, p.kind = true, v
				case "g":
					p.convert, p.group = true, v
				case "v":
					p.convert, p.version = true, v
				case "stream":
					streamOK = v == "" || (m.stream && v == "watch")
				case "sv":
					p.sv = v
				}
			}
			if !streamOK || !m.served {
				continue
			}
			if f, ok := allow(m, p); ok {
				return f, true
			}
		}
	}
	return format{}, false
}

// The media types go-restful's routes for built-in resources produce, as
// its 406 lists them.
const (
	listProduces = "application/json, application/yaml, application/vnd.kubernetes.protobuf, " +
		"application/json;stream=watch, application/vnd.kubernetes.protobuf;stream=watch"
	getProduces = "application/json, application/yaml, application/vnd.kubernetes.protobuf"
)

// routeAccepts reports whether go-restful's route selection accepts an
// Accept header: some clause, parameters dropped and spaces trimmed, is
// "*/*" or exactly one of the route's media types (so "application/*" is
// not). An empty header is "*/*".
func routeAccepts(accept string) bool {
	if accept == "" {
		return true
	}
	for clause := range strings.SplitSeq(accept, ",") {
		mt, _, _ := strings.Cut(clause, ";")
		switch strings.Trim(mt, " ") {
		case "*/*", "application/json", "application/yaml", "application/vnd.kubernetes.protobuf":
			return true
		}
	}
	return false
}
