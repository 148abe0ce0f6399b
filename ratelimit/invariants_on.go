//go:build invariants || race

package ratelimit

// invariants turns caller bugs that the queue can detect (Done of a key that
// is not being processed) into panics. It is on in race and invariants builds,
// so that tests fail loudly; production builds ignore such calls, as
// client-go's workqueue does.
const invariants = true
