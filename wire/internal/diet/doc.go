// Package diet is wire's memory diet: what is done to objects as they are
// decoded so that a cache of them holds less — strings that repeat across
// objects interned (intern.go, diet.go), pods' slices compacted, and
// pods' identical parts shared between pods (share.go, shareproto.go) and
// with the previous version of the same pod (versions.go), with the
// shared parts checked under KUBE_CACHE_MUTATION_DETECTOR (mutation.go).
// Protobuf pods are also decoded into slices of their exact size
// (presize.go), with or without the diet. wire's doc.go, "Memory diet",
// describes the steps, their contracts (aliasing, transforms) and where
// their effect is measured; wire's options select them.
//
// # The seam
//
// The codec (package wire) owns the bytes: it splits, frames and decodes,
// and cuts managedFields from the bytes (Config.DropManagedFields is read
// by the codec alone). This package never sees a frame, a list or a
// format, and imports nothing of wire but internal/pbwire (protobuf field
// walking and cutting). The codec calls:
//
//   - New(Config, workers): once per ListerWatcher; the Applier keeps the
//     caches of its decoders (one interner per worker, and with sharing
//     the table of the pods decoded last).
//   - Applier.Apply(obj): on every object it decoded by any path (JSON,
//     CBOR, client-go's decoders, protobuf other than shared pods), typed,
//     unstructured or metadata-only.
//   - Applier.ProtoPod(b): instead of decoding, for a protobuf pod's bytes
//     when Config.Sharing, since parts are looked up and cut from the
//     bytes before the rest is unmarshalled.
//   - DecodePod(p, b): to decode a protobuf pod otherwise (exact-size
//     slices, no diet; Apply follows).
//   - Config.On, Config.Sharing and Config.String: to skip the diet, to
//     choose between the two pod paths, and to describe it (wire's
//     ListerWatcher.String).
//
// Apply, ProtoPod and DecodePod run on the decoder goroutines, several at
// once; each call takes one of the Applier's interners for its object and
// puts it back after, so no lock is taken but the versions table's
// per-stripe mutex.
//
// # Usage
//
//	d := diet.New(diet.Config{Intern: true, Compact: true, Share: true}, workers)
//	if d.Sharing() && isPod {
//		obj, err = d.ProtoPod(itemBytes)
//	} else {
//		obj = d.Apply(decoded)
//	}
package diet
