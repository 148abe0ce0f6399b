package protocol

import (
	"bufio"
	"encoding/json"
	"io"
	"sync"
)

// Encoder writes values (a Spec, Commands, Messages) as JSON, one a line.
// It is safe for concurrent use: each value is written whole.
type Encoder struct {
	mu  sync.Mutex
	enc *json.Encoder
}

// NewEncoder writes to w.
func NewEncoder(w io.Writer) *Encoder { return &Encoder{enc: json.NewEncoder(w)} }

// Encode writes v and a newline.
func (e *Encoder) Encode(v any) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.enc.Encode(v)
}

// NewDecoder reads what an Encoder wrote, through a buffer of 1 MiB (the
// CmdState of a million keys is one line of ≈40 MB).
func NewDecoder(r io.Reader) *json.Decoder {
	return json.NewDecoder(bufio.NewReaderSize(r, 1<<20))
}
