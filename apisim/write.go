package apisim

import (
	"fmt"
	"io"
	"net/http"
	"strings"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/scheme"
)

// Leases returns the coordination.k8s.io/v1 leases API. Unlike the other
// resources, leases may also be created, updated and deleted over HTTP, so
// that client-go's Lease client and leader-election-style code work
// against the server.
func (s *Server) Leases() *Objects[*coordinationv1.Lease] {
	return objectsOf[*coordinationv1.Lease](s, s.reg.leases)
}

// maxWriteBody is the API server's limit on a request body (3 MiB).
const maxWriteBody = 3 << 20

// serveWrite serves a write to a writable resource: POST on a namespaced
// collection creates (201), PUT on an object updates (200), DELETE on an
// object deletes (200, the final state), each answering with the object in
// the negotiated encoding. Bodies are JSON or protobuf, as client-go sends
// them. Runs on net/http's connection goroutine.
func (s *Server) serveWrite(w http.ResponseWriter, r *http.Request, res *apiResource, ns, name string) {
	verb := ""
	switch {
	case r.Method == http.MethodPost && name == "" && ns != "":
		verb = "create"
	case r.Method == http.MethodPut && name != "":
		verb = "update"
	case r.Method == http.MethodDelete && name != "":
		verb = "delete"
	default:
		s.stats.other.Add(1)
		writeStatus(w, r, apierrors.NewMethodNotSupported(res.groupResource(), strings.ToLower(r.Method)))
		return
	}
	fm, ok := negotiate(r.Header.Get("Accept"), res)
	if !ok || fm.convert != "" {
		s.stats.other.Add(1)
		writeStatus(w, r, notAcceptable("only the following media types are accepted: "+
			"application/json, application/yaml, application/vnd.kubernetes.protobuf"))
		return
	}
	if s.unavailable.Load() {
		s.stats.other.Add(1)
		writeStatus(w, r, apierrors.NewServiceUnavailable("apisim: server is unavailable"))
		return
	}
	s.stats.write.Add(1)
	body, err := io.ReadAll(io.LimitReader(r.Body, maxWriteBody+1))
	if err != nil {
		writeStatus(w, r, badRequest("reading the request body: %v", err))
		return
	}
	if len(body) > maxWriteBody {
		writeStatus(w, r, apierrors.NewRequestEntityTooLargeError(fmt.Sprintf("limit is %d", maxWriteBody)))
		return
	}
	var (
		out  Object
		code = http.StatusOK
	)
	switch verb {
	case "create", "update":
		obj, err := decodeBody(res, body)
		if err == nil {
			err = checkIdentity(obj, ns, name, verb)
		}
		if err == nil && verb == "create" {
			out, err = s.st.create(res, obj)
			code = http.StatusCreated
		} else if err == nil {
			out, err = s.st.updateIf(res, obj, preconditions{rv: obj.GetResourceVersion(), uid: obj.GetUID()})
		}
		if err != nil {
			writeStatus(w, r, err)
			return
		}
	case "delete":
		pre, err := deletePreconditions(body)
		if err == nil {
			out, err = s.st.delete(res, ns, name, pre)
		}
		if err != nil {
			writeStatus(w, r, err)
			return
		}
	}
	enc, err := res.codec.encode(nil, out, fm.ct)
	if err != nil {
		writeStatus(w, r, err)
		return
	}
	w.Header().Set("Content-Type", fm.ct.mediaType())
	w.WriteHeader(code)
	f := &frameWriter{ct: fm.ct, v: fm.view, w: countingWriter{w, &s.stats.bytes}}
	_ = f.writeObject(enc)
}

// decodeBody decodes a JSON or protobuf object of res's kind.
func decodeBody(res *apiResource, body []byte) (Object, error) {
	if len(body) == 0 {
		return nil, badRequest("the request body is empty")
	}
	into := res.codec.empty()
	got, gvk, err := scheme.Codecs.UniversalDeserializer().Decode(body, nil, into)
	if err != nil {
		return nil, badRequest("decoding the request body: %v", err)
	}
	if want := res.gvr.GroupVersion().WithKind(res.kind); gvk == nil || *gvk != want {
		return nil, badRequest("the request body is a %v, not a %v", gvk, want)
	}
	obj, ok := got.(Object)
	if !ok {
		return nil, badRequest("the request body is a %T", got)
	}
	return obj, nil
}

// checkIdentity applies the API server's rules for the namespace and name
// of a written object: an empty namespace takes the request's; a different
// one, or (on update) a name other than the URL's, is a 400.
func checkIdentity(obj Object, ns, name, verb string) error {
	switch obj.GetNamespace() {
	case "":
		obj.SetNamespace(ns)
	case ns:
	default:
		return badRequest("the namespace of the provided object does not match the namespace sent on the request")
	}
	if verb == "update" && obj.GetName() != name {
		return badRequest("the name of the object (%s) does not match the name on the URL (%s)", obj.GetName(), name)
	}
	return nil
}

// deletePreconditions decodes an optional DeleteOptions body.
func deletePreconditions(body []byte) (preconditions, error) {
	if len(body) == 0 {
		return preconditions{}, nil
	}
	var opts metav1.DeleteOptions
	if _, _, err := scheme.Codecs.UniversalDeserializer().Decode(body, nil, &opts); err != nil {
		return preconditions{}, badRequest("decoding DeleteOptions: %v", err)
	}
	var pre preconditions
	if p := opts.Preconditions; p != nil {
		if p.ResourceVersion != nil {
			pre.rv = *p.ResourceVersion
		}
		if p.UID != nil {
			pre.uid = *p.UID
		}
	}
	return pre, nil
}
