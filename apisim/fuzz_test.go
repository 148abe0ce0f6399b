package apisim

import (
	"strings"
	"testing"
)

// FuzzNegotiate feeds arbitrary Accept headers to the negotiation of every
// resource. It must not panic; an accepted format names a served content
// type and a view; whole custom resources are never protobuf; a
// PartialObjectMetadata view comes with its conversion and only from a
// clause asking for it. The seed corpus is testdata/fuzz/FuzzNegotiate.
func FuzzNegotiate(f *testing.F) {
	f.Add("application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json")
	f.Add("application/json;q=0.9, application/vnd.kubernetes.protobuf;stream=watch;q=0.5, */*;q=0.1")
	reg := newResourceSet()
	f.Fuzz(func(t *testing.T, accept string) {
		_ = routeAccepts(accept)
		if ct := negotiateStatus(accept); ct != ctJSON && ct != ctProtobuf {
			t.Fatalf("status content type %d", ct)
		}
		for _, res := range reg.all {
			fm, ok := negotiate(accept, res)
			if !ok {
				continue
			}
			if fm.view == nil || (fm.ct != ctJSON && fm.ct != ctProtobuf) {
				t.Fatalf("%s: Accept %q gave %+v", res.gvr.Resource, accept, fm)
			}
			if fm.view.meta != (fm.convert != "") || (fm.view.meta && !strings.Contains(accept, "PartialObjectMetadata")) {
				t.Fatalf("%s: Accept %q gave view meta=%v convert %q", res.gvr.Resource, accept, fm.view.meta, fm.convert)
			}
			if res.custom && !fm.view.meta && fm.ct == ctProtobuf {
				t.Fatalf("%s: Accept %q gave protobuf custom resources", res.gvr.Resource, accept)
			}
		}
	})
}

// FuzzDecodeContinue feeds arbitrary continue tokens to the decoder. It
// must not panic, and a token it accepts re-encodes to one that decodes the
// same. The seed corpus is testdata/fuzz/FuzzDecodeContinue.
func FuzzDecodeContinue(f *testing.F) {
	f.Add(encodeContinue(12, "/pods/ns/name"))
	f.Add("eyJ2IjoiYXBpc2ltL3YxIiwicnYiOjAsInN0YXJ0IjoiIn0")
	f.Fuzz(func(t *testing.T, token string) {
		tok, err := decodeContinue(token)
		if err != nil {
			return
		}
		again, err := decodeContinue(encodeContinue(tok.RV, strings.TrimSuffix(tok.Start, "\x00")))
		if err != nil || (strings.HasSuffix(tok.Start, "\x00") && again != tok) {
			t.Fatalf("%q decodes to %+v, which does not round-trip: %+v %v", token, tok, again, err)
		}
	})
}
