package wire

import (
	"encoding/json"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metainternalversionscheme "k8s.io/apimachinery/pkg/apis/meta/internalversion/scheme"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/shardinformer/shardinformer/wire/internal/diet"
)

// Metadata-only objects: a Resource whose Object is a
// *metav1.PartialObjectMetadata lists and watches as client-go's metadata
// client (k8s.io/client-go/metadata) does — its Accept headers, its
// decoders (apimachinery's meta internal-version scheme, without
// conversion) and its treatment of answers that are not
// PartialObjectMetadata. See doc.go, "Metadata-only objects".

// The Accept headers of client-go's metadata client: protobuf first, then
// JSON, each transformed to PartialObjectMetadata(List), then JSON as the
// object is. With WithContentType(JSON) the protobuf clause is left out.
const (
	metadataListAccept  = "application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1," + metadataListAcceptJSON
	metadataWatchAccept = "application/vnd.kubernetes.protobuf;as=PartialObjectMetadata;g=meta.k8s.io;v=v1," + metadataWatchAcceptJSON

	metadataListAcceptJSON  = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json"
	metadataWatchAcceptJSON = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json"
)

// isMetadata reports whether obj asks for metadata-only objects.
func isMetadata(obj runtime.Object) bool {
	_, ok := obj.(*metav1.PartialObjectMetadata)
	return ok
}

// metadataAccept returns the Accept headers of lists and watches for ct,
// which must be Protobuf or JSON.
func metadataAccept(ct ContentType) (list, watch string) {
	if ct == JSON {
		return metadataListAcceptJSON, metadataWatchAcceptJSON
	}
	return metadataListAccept, metadataWatchAccept
}

// newMetadataCodec returns the codec of PartialObjectMetadata. Its fast
// paths take meta.k8s.io/v1 PartialObjectMetadata and
// PartialObjectMetadataList (the type's protobuf metadata is field 1, so
// managedFields are cut from the bytes); its reference decoders are the
// metadata client's, which know meta.k8s.io's kinds and Status and nothing
// else, and have no CBOR.
func newMetadataCodec(d *diet.Applier) (*codec, error) {
	gvk := metav1.SchemeGroupVersion.WithKind("PartialObjectMetadata")
	c := &codec{
		typed:      true,
		metadata:   true,
		gvk:        gvk,
		listGVK:    gvk.GroupVersion().WithKind(gvk.Kind + "List"),
		apiVersion: gvk.GroupVersion().String(),
		newItem:    func() runtime.Object { return &metav1.PartialObjectMetadata{} },
		protobuf:   true,
		canExcise:  true,
		diet:       d,
	}
	// As metadata.ConfigFor and NewForConfigAndClient configure the
	// client: these codecs, for the empty group version.
	negotiator := runtime.NewClientNegotiator(metainternalversionscheme.Codecs.WithoutConversion(), schema.GroupVersion{})
	for _, f := range []format{formatJSON, formatProtobuf} {
		obj, ev, _, err := negotiator.StreamDecoder(f.mediaType(), nil)
		if err != nil {
			return nil, fmt.Errorf("wire: no %s decoder for metadata: %w", f.mediaType(), err)
		}
		c.reference[f].object, c.reference[f].event = obj, ev
	}
	return c, nil
}

// metadataList decodes a whole list body as the metadata client's List
// does: decoded into whatever kind it names, a Status other than Success
// is its error; a kind the scheme does not know (a server that ignored the
// transformation and sent the objects themselves) is decoded from JSON
// with encoding/json and its TypeMeta cleared; any other kind but
// PartialObjectMetadataList is an error. Error messages are the client's.
func (lw *ListerWatcher) metadataList(f format, data []byte) (runtime.Object, error) {
	obj, _, err := lw.codec.reference[f].object.Decode(data, nil, nil)
	switch {
	case runtime.IsNotRegisteredError(err):
		var partial metav1.PartialObjectMetadataList
		if err := json.Unmarshal(data, &partial); err != nil {
			return nil, fmt.Errorf("unable to decode returned object as PartialObjectMetadataList: %v", err)
		}
		partial.TypeMeta = metav1.TypeMeta{}
		obj = &partial
	case err != nil:
		return nil, err
	}
	if s, ok := obj.(*metav1.Status); ok && s.Status != metav1.StatusSuccess {
		return nil, apierrors.FromObject(s)
	}
	list, ok := obj.(*metav1.PartialObjectMetadataList)
	if !ok {
		return nil, fmt.Errorf("unexpected object, expected PartialObjectMetadata but got %T", obj)
	}
	return list, nil
}
