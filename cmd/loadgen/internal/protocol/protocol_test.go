package protocol

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shardinformer/shardinformer/cmd/loadgen/internal/report"
)

// TestConversation: a Spec, then Commands, round-trip through an Encoder
// and NewDecoder; Messages written by many goroutines at once arrive whole,
// each once; a truncated line is an error, not a value.
func TestConversation(t *testing.T) {
	pr, pw := io.Pipe()
	enc := NewEncoder(pw)
	sp := Spec{Scenario: report.ScenarioController, Impl: report.ImplOurs, Pods: 1000, Quiesce: 3 * time.Second,
		Replica: &ReplicaSpec{Identity: "r-1", Slots: 16, LeaseDuration: 15 * time.Second}}
	const writers, each = 8, 200
	go func() {
		_ = enc.Encode(sp)
		_ = enc.Encode(Command{Cmd: CmdState, State: map[string]string{"ns/a": "7"}, Final: true})
		var wg sync.WaitGroup
		for w := range writers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range each {
					_ = enc.Encode(Message{Type: MsgSample, Error: fmt.Sprint(w, "/", i), Sample: &Sample{Synced: i, Lat: &LatencyWindow{N: uint64(w)}}})
				}
			}()
		}
		wg.Wait()
		_ = pw.Close()
	}()
	dec := NewDecoder(pr)
	var got Spec
	if err := dec.Decode(&got); err != nil || got.Impl != sp.Impl || got.Quiesce != sp.Quiesce || got.Replica == nil || *got.Replica != *sp.Replica {
		t.Fatalf("spec %+v (%v), want %+v", got, err, sp)
	}
	var cmd Command
	if err := dec.Decode(&cmd); err != nil || cmd.Cmd != CmdState || cmd.State["ns/a"] != "7" || !cmd.Final {
		t.Fatalf("command %+v (%v)", cmd, err)
	}
	seen := map[string]bool{}
	for {
		var m Message
		if err := dec.Decode(&m); err == io.EOF {
			break
		} else if err != nil {
			t.Fatalf("after %d messages: %v", len(seen), err)
		}
		if m.Type != MsgSample || m.Sample == nil || m.Sample.Lat == nil || seen[m.Error] {
			t.Fatalf("message %+v: mangled or repeated", m)
		}
		seen[m.Error] = true
	}
	if len(seen) != writers*each {
		t.Errorf("%d messages, want %d", len(seen), writers*each)
	}
	var m Message
	if err := NewDecoder(strings.NewReader(`{"type":"sample","sample":{"synced":`)).Decode(&m); err == nil {
		t.Errorf("a truncated line decoded as %+v", m)
	}
}
