//go:build invariants || race

package ratelimit

// invariants turns caller bugs that the queue can detect (Done of a key that
// is not being processed) into panics. It is on in race and invariants builds,
// so that tests fail loudly; production builds ignore such calls, as
// client-go's workqueue does.
const invariants = true

// segSize is the number of cells per ready-queue segment. Race and
// invariants builds use tiny segments so that every test crosses many
// segment boundaries; see invariants_off.go for the production size.
const segSize = 4
