package faults

import (
	"bytes"
	"errors"
	"io"
	"mime"
	"net/http"
	"strconv"
	"time"

	"github.com/munnerz/goautoneg"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/runtime/serializer/cbor"
	"k8s.io/apimachinery/pkg/watch"
)

// injectedMessage marks every Status the proxy makes up.
const injectedMessage = "fault injected by shardinformer/faults"

// codecs encode the Statuses and watch events the proxy makes up with
// apimachinery's serializers: JSON, protobuf (the "k8s\x00" envelope around
// a runtime.Unknown) and CBOR, each with its stream framing. Read-only
// after init.
var codecs = func() serializer.CodecFactory {
	s := runtime.NewScheme()
	metav1.AddToGroupVersion(s, schema.GroupVersion{Version: "v1"}) // Status, WatchEvent
	return serializer.NewCodecFactory(s, serializer.WithSerializer(cbor.NewSerializerInfo))
}()

var v1 = schema.GroupVersion{Version: "v1"}

// negotiate returns the serializer a Status answer to a request with this
// Accept header is encoded in: the first acceptable of the proxy's media
// types in the client's order of preference, else JSON (as the API server
// falls back for errors).
func negotiate(accept string) runtime.SerializerInfo {
	infos := codecs.SupportedMediaTypes()
	for _, clause := range goautoneg.ParseAccept(accept) {
		for _, info := range infos {
			if (clause.Type == info.MediaTypeType || clause.Type == "*") && (clause.SubType == info.MediaTypeSubType || clause.SubType == "*") {
				if clause.Type == "*" || clause.SubType == "*" {
					return jsonInfo()
				}
				return info
			}
		}
	}
	return jsonInfo()
}

func jsonInfo() runtime.SerializerInfo {
	info, _ := runtime.SerializerInfoForMediaType(codecs.SupportedMediaTypes(), runtime.ContentTypeJSON)
	return info
}

// streamInfo returns the serializer of a watch response with this
// Content-Type ("application/json", "application/vnd.kubernetes.protobuf;
// stream=watch", "application/cbor-seq"), and whether there is one.
func streamInfo(contentType string) (runtime.SerializerInfo, bool) {
	mt, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		return runtime.SerializerInfo{}, false
	}
	if mt == "application/cbor-seq" {
		mt = "application/cbor"
	}
	info, ok := runtime.SerializerInfoForMediaType(codecs.SupportedMediaTypes(), mt)
	return info, ok && info.StreamSerializer != nil
}

// faultStatus is the Status a status fault answers with.
func faultStatus(k Kind, retryAfter time.Duration) *metav1.Status {
	var err *apierrors.StatusError
	switch k {
	case TooManyRequests:
		err = apierrors.NewTooManyRequests("the server has received too many requests and has asked us to try again later ("+injectedMessage+")", retryAfterSeconds(retryAfter))
	case Gone:
		err = apierrors.NewResourceExpired("too old resource version (" + injectedMessage + ")")
	default:
		err = apierrors.NewInternalError(errors.New(injectedMessage))
	}
	st := err.Status()
	return &st
}

func retryAfterSeconds(d time.Duration) int {
	return max(1, int((d+time.Second-1)/time.Second))
}

// encode encodes obj with info's serializer (stream: its stream
// serializer) at v1.
func encode(obj runtime.Object, info runtime.SerializerInfo, stream bool) ([]byte, error) {
	s := info.Serializer
	if stream {
		s = info.StreamSerializer.Serializer
	}
	var b bytes.Buffer
	if err := codecs.EncoderForVersion(s, v1).Encode(obj, &b); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// writeStatus answers with st in the content type negotiated from r's
// Accept header, with Retry-After for a 429 that carries one.
func writeStatus(w http.ResponseWriter, r *http.Request, st *metav1.Status) error {
	info := negotiate(r.Header.Get("Accept"))
	body, err := encode(st, info, false)
	if err != nil {
		return err
	}
	if st.Details != nil && st.Details.RetryAfterSeconds > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(int(st.Details.RetryAfterSeconds)))
	}
	w.Header().Set("Content-Type", info.MediaType)
	w.Header().Set("Cache-Control", "no-cache, private")
	w.WriteHeader(int(st.Code))
	_, err = w.Write(body)
	return err
}

// writeErrorEvent writes one ERROR watch event holding st to w in info's
// stream framing: the Status encoded as an object of the stream (for
// protobuf "k8s\x00"-enveloped), inside a meta/v1 WatchEvent, framed by
// info's framer (JSON: a line; protobuf: length-prefixed).
func writeErrorEvent(w io.Writer, info runtime.SerializerInfo, st *metav1.Status) error {
	obj, err := encode(st, info, false)
	if err != nil {
		return err
	}
	ev, err := encode(&metav1.WatchEvent{Type: string(watch.Error), Object: runtime.RawExtension{Raw: obj}}, info, true)
	if err != nil {
		return err
	}
	_, err = info.StreamSerializer.Framer.NewFrameWriter(w).Write(ev)
	return err
}
