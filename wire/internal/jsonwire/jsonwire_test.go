package jsonwire

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

// frames reads every value of stream with ReadValue through a reader that
// returns one byte at a time (so every refill path runs), and the error
// that ended it.
func frames(stream []byte, max int) ([][]byte, error) {
	s := NewScanner(iotest.OneByteReader(bytes.NewReader(stream)), max)
	var out [][]byte
	for {
		v, err := ReadValue(s, nil)
		if err != nil {
			return out, err
		}
		out = append(out, v)
	}
}

// decoderFrames reads every value of stream with json.Decoder, as
// client-go's JSON watch framer does.
func decoderFrames(stream []byte) ([][]byte, error) {
	d := json.NewDecoder(bytes.NewReader(stream))
	var out [][]byte
	for {
		var m json.RawMessage
		if err := d.Decode(&m); err != nil {
			return out, err
		}
		out = append(out, bytes.Clone(m))
	}
}

// class names the kind of error that ends a stream.
func class(err error) string {
	switch {
	case err == io.EOF:
		return "EOF"
	case err == io.ErrUnexpectedEOF:
		return "unexpected EOF"
	case errors.Is(err, ErrTooLarge):
		return "too large"
	}
	var se *SyntaxError
	var jse *json.SyntaxError
	if errors.As(err, &se) || errors.As(err, &jse) {
		return "syntax"
	}
	return "other: " + err.Error()
}

// FuzzReadValue: ReadValue frames any byte stream into the same values, and
// ends with the same kind of error, as json.Decoder.
func FuzzReadValue(f *testing.F) {
	for _, s := range []string{
		`{"type":"ADDED","object":{"a":[1,2.5e3,-0,true,false,null,"x\u00e9\n"]}}` + "\n" + `{"b":{}}`,
		`1 2 3`, `01`, `truefalse`, `"a""b"`, `{"a":1}}`, `[1,]`, `{"a" 1}`, "\"\x01\"", `"\ud800"`, `1.`, `-`, `1e+`, ` `, ``,
		`[[[[[[]]]]]]`, `{"a":"b",}`, `nul`, `"\x"`, "\xff",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, stream []byte) {
		got, gerr := frames(stream, 1<<20)
		want, werr := decoderFrames(stream)
		if len(got) != len(want) {
			t.Fatalf("%d values, json.Decoder %d (errors %v / %v)", len(got), len(want), gerr, werr)
		}
		for i := range got {
			if !bytes.Equal(got[i], want[i]) {
				t.Fatalf("value %d: %q, json.Decoder %q", i, got[i], want[i])
			}
		}
		if class(gerr) != class(werr) {
			t.Fatalf("ends with %q (%v), json.Decoder with %q (%v)", class(gerr), gerr, class(werr), werr)
		}
	})
}

func TestDepthLimit(t *testing.T) {
	deep := strings.Repeat("[", 10000) + strings.Repeat("]", 10000)
	if _, err := frames([]byte(deep), 1<<20); err != io.EOF {
		t.Fatalf("10000 levels: %v", err)
	}
	deeper := "[" + deep + "]"
	_, err := frames([]byte(deeper), 1<<20)
	if class(err) != "syntax" {
		t.Fatalf("10001 levels: %v", err)
	}
	if _, jerr := decoderFrames([]byte(deeper)); class(jerr) != "syntax" {
		t.Fatalf("json.Decoder on 10001 levels: %v", jerr)
	}
}

func TestTooLarge(t *testing.T) {
	big := `{"a":"` + strings.Repeat("x", 5000) + `"}`
	_, err := frames([]byte(`{"small":1} `+big), 4096)
	if !errors.Is(err, ErrTooLarge) {
		t.Fatalf("got %v, want ErrTooLarge", err)
	}
}

type listRecorder struct {
	kind, apiVersion string
	members          []string
	items            []string
	decline          bool
}

func (r *listRecorder) Kind(apiVersion, kind string) error {
	r.apiVersion, r.kind = apiVersion, kind
	if r.decline {
		return ErrDecline
	}
	return nil
}
func (r *listRecorder) Member(key string, v []byte) error {
	r.members = append(r.members, key+"="+string(v))
	return nil
}
func (r *listRecorder) Alloc(n int) []byte { return make([]byte, n) }
func (r *listRecorder) Item(b []byte) error {
	r.items = append(r.items, string(b))
	return nil
}

func TestReadList(t *testing.T) {
	body := ` {"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"5"},"items":[ {"a":1} , {"b":[2]} ],"extra":null} `
	var r listRecorder
	if err := ReadList(NewScanner(iotest.HalfReader(strings.NewReader(body)), 64), &r); err != nil {
		t.Fatal(err)
	}
	if r.kind != "PodList" || r.apiVersion != "v1" {
		t.Fatalf("kind %q apiVersion %q", r.kind, r.apiVersion)
	}
	if got := strings.Join(r.items, "|"); got != `{"a":1}|{"b":[2]}` {
		t.Fatalf("items %s", got)
	}
	if got := strings.Join(r.members, "|"); got != `kind="PodList"|apiVersion="v1"|metadata={"resourceVersion":"5"}|extra=null` {
		t.Fatalf("members %s", got)
	}
}

func TestReadListDecline(t *testing.T) {
	for _, body := range []string{
		`{"kind":"Status","apiVersion":"v1","items":[{"a":1}]}`,
		`{"Kind":"PodList","items":[]}`,
		`{"kind":5,"items":[]}`,
	} {
		r := listRecorder{decline: strings.Contains(body, "Status")}
		err := ReadList(NewScanner(strings.NewReader(body), 1<<20), &r)
		var nc *NotCanonicalError
		if !errors.As(err, &nc) {
			t.Fatalf("%s: %v, want NotCanonicalError", body, err)
		}
		all, _ := io.ReadAll(nc.Body)
		if string(all) != body {
			t.Fatalf("%s: Body gives %q", body, all)
		}
		if len(r.items) != 0 {
			t.Fatalf("%s: items handed on before declining", body)
		}
	}
}

func TestReadListErrors(t *testing.T) {
	for body, want := range map[string]string{
		`{"kind":"PodList","items":[{"a":1}],"items":[]}`: "two items",
		`{"items":[{"a":1}],"Kind":"X"}`:                  "after its items",
		`{"items":[{"a":1}] x`:                            "syntax",
		`{"items":[{"a":1}]} {}`:                          "syntax",
		`{"items":[{"a":1}`:                               "unexpected EOF",
		`{"items":5}`:                                     "not an array",
	} {
		err := ReadList(NewScanner(strings.NewReader(body), 1<<20), &listRecorder{})
		if err == nil || (!strings.Contains(err.Error(), want) && class(err) != want) {
			t.Errorf("%s: %v, want %s", body, err, want)
		}
	}
}

func TestParseWatchEvent(t *testing.T) {
	typ, obj, ok := ParseWatchEvent([]byte(` {"type":"MODI\u0046IED","object":{"kind":"Pod"}} `))
	if !ok || typ != "MODIFIED" || string(obj) != `{"kind":"Pod"}` {
		t.Fatalf("%q %q %v", typ, obj, ok)
	}
	for _, s := range []string{
		`{"type":"ADDED"}`, `{"type":"ADDED","object":{},"x":1}`, `{"type":"ADDED","object":null}`,
		`{"type":1,"object":{}}`, `{"type":"A","type":"B","object":{}}`, `{"type":"ADDED","object":{}} {}`,
	} {
		if _, _, ok := ParseWatchEvent([]byte(s)); ok {
			t.Errorf("%s: accepted", s)
		}
	}
}

func TestInspect(t *testing.T) {
	in := `{"kind":"Pod","apiVersion":"v1","metadata":{"managedFields":[{"m":1}], "name":"a" ,"managedFields":null,"uid":"u"},"spec":{}}`
	out, apiVersion, kind, ok := Inspect([]byte(in), true)
	if !ok || kind != "Pod" || apiVersion != "v1" {
		t.Fatalf("%q %q %v", apiVersion, kind, ok)
	}
	if want := `{"kind":"Pod","apiVersion":"v1","metadata":{"name":"a","uid":"u"},"spec":{}}`; string(out) != want {
		t.Fatalf("got  %s\nwant %s", out, want)
	}
	for _, s := range []string{`{"kind":"Pod","KIND":"x"}`, `{"kind":"a","kind":"b"}`, `{"metadata":{},"metadata":{}}`, `[1]`, `{"kind":"Pod"} 1`} {
		if _, _, _, ok := Inspect([]byte(s), true); ok {
			t.Errorf("%s: accepted", s)
		}
	}
}
