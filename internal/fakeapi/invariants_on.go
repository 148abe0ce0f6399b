//go:build invariants || race

package fakeapi

// invariants turns caller bugs that the cluster can detect (UpdateKeyed with
// a key that is not the object's) into panics. It is on in race and
// invariants builds, so that tests fail loudly; other builds trust the caller,
// which is the point of UpdateKeyed.
const invariants = true
