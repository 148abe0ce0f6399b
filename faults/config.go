package faults

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/client-go/rest"
)

// Kind is a kind of fault.
type Kind int

// The kinds of fault, in the order a request's draw tries them.
const (
	// Cut ends the connection after a random number of response bytes (in
	// [0, Config.Bytes)): a list's body or a watch stream truncated, usually
	// in the middle of an object or frame.
	Cut Kind = iota
	// Stall stops the response for Rule.Duration after a random number of
	// bytes, then goes on.
	Stall
	// InternalError answers the request with a 500 InternalError Status.
	InternalError
	// TooManyRequests answers with a 429 TooManyRequests Status and a
	// Retry-After of Rule.Duration (whole seconds, at least 1), as API
	// Priority and Fairness does.
	TooManyRequests
	// Gone answers a list with a 410 Expired Status; on a watch it injects,
	// after a random number of bytes (at the next frame boundary), an ERROR
	// watch event carrying a 410 Expired Status in the stream's own framing
	// and ends the stream, as the API server's watch cache does.
	Gone

	numKinds = iota
)

// Kinds returns every kind, in draw order.
func Kinds() []Kind { return []Kind{Cut, Stall, InternalError, TooManyRequests, Gone} }

var kindNames = [numKinds]string{"cut", "stall", "500", "429", "410"}

// String returns the kind's name in a spec: cut, stall, 500, 429 or 410.
func (k Kind) String() string {
	if k >= 0 && int(k) < numKinds {
		return kindNames[k]
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// ParseKind parses a kind's name (see Kind.String).
func ParseKind(s string) (Kind, error) {
	if i := slices.Index(kindNames[:], s); i >= 0 {
		return Kind(i), nil
	}
	return 0, fmt.Errorf("faults: unknown kind %q (want one of %s)", s, strings.Join(kindNames[:], ", "))
}

// Rule says how often one kind of fault is injected and how many at most.
// The zero value injects nothing.
type Rule struct {
	// P is the probability that an eligible request draws this kind, in
	// [0, 1]. The P of all kinds add up to at most 1: a request draws at
	// most one fault.
	P float64
	// Max bounds the faults of this kind injected (or pending in open
	// streams) over the proxy's life; 0 means Config.Max.
	Max int
	// Every is the least time between two faults of this kind (a rate
	// bound); 0 means Config.Every.
	Every time.Duration
	// Duration: for Stall how long the response stops (0: 2s); for
	// TooManyRequests the Retry-After (0: 1s). Unused by the others.
	Duration time.Duration
}

// Defaults of Config's zero values.
const (
	DefaultMax   = 1000
	DefaultBytes = 1 << 20
	// DefaultStall is a Stall's duration when Rule.Duration is 0.
	DefaultStall = 2 * time.Second
	// DefaultRetryAfter is a 429's Retry-After when Rule.Duration is 0.
	DefaultRetryAfter = time.Second
)

// Config configures a Proxy. Upstream is required; the zero value of every
// other field is documented.
type Config struct {
	// Upstream is the API server the proxy forwards to: its Host, TLS
	// configuration and credentials (rest.TransportFor). Clients of the
	// proxy need no credentials (ClientConfig strips them); the proxy
	// authenticates as Upstream. A client's own Authorization header, if
	// it sends one, is forwarded and takes precedence.
	Upstream *rest.Config
	// Addr is the loopback address to listen on; "" is 127.0.0.1:0.
	Addr string
	// Seed makes the draws: the n-th request the proxy sees draws the same
	// fault (kind and byte offset) for the same seed. Which request is the
	// n-th depends on arrival order, and bounds and StopFaults may veto a
	// draw, so a run with concurrent clients is not replayed byte for
	// byte; the same seed gives the same sequence of draws.
	Seed int64
	// Rules by kind; a kind without a rule is never injected.
	Rules map[Kind]Rule
	// Max is the default Rule.Max; 0 means DefaultMax. A negative Max
	// means unbounded.
	Max int
	// Every is the default Rule.Every; 0 means none.
	Every time.Duration
	// Bytes bounds the random byte offset of a Cut, a Stall and a watch's
	// Gone: uniform in [0, Bytes); it is also how many bytes of a watch
	// stream pass without a fault before the stream draws again. 0 means
	// DefaultBytes.
	Bytes int64
	// Eligible decides which requests may draw a fault; nil means every
	// GET (lists, watches, gets). Others are forwarded untouched and do not
	// draw.
	Eligible func(method, path, rawQuery string) bool
}

func (c Config) withDefaults() Config {
	if c.Max == 0 {
		c.Max = DefaultMax
	}
	if c.Bytes == 0 {
		c.Bytes = DefaultBytes
	}
	if c.Addr == "" {
		c.Addr = "127.0.0.1:0"
	}
	rules := make(map[Kind]Rule, len(c.Rules))
	for k, r := range c.Rules {
		if r.Max == 0 {
			r.Max = c.Max
		}
		if r.Every == 0 {
			r.Every = c.Every
		}
		if r.Duration == 0 {
			switch k {
			case Stall:
				r.Duration = DefaultStall
			case TooManyRequests:
				r.Duration = DefaultRetryAfter
			}
		}
		rules[k] = r
	}
	c.Rules = rules
	return c
}

func (c Config) validate() error {
	var errs []error
	if c.Upstream == nil || c.Upstream.Host == "" {
		errs = append(errs, errors.New("faults: Config.Upstream with a Host is required"))
	}
	sum := 0.0
	for _, k := range Kinds() {
		r, ok := c.Rules[k]
		if !ok {
			continue
		}
		if math.IsNaN(r.P) || r.P < 0 || r.P > 1 {
			errs = append(errs, fmt.Errorf("faults: %s: probability %v is not in [0, 1]", k, r.P))
		}
		sum += r.P
		if r.Every < 0 || r.Duration < 0 {
			errs = append(errs, fmt.Errorf("faults: %s: negative duration (every %v, duration %v)", k, r.Every, r.Duration))
		}
	}
	for k := range c.Rules {
		if k < 0 || int(k) >= numKinds {
			errs = append(errs, fmt.Errorf("faults: rule for unknown %v", k))
		}
	}
	if sum > 1+1e-9 {
		errs = append(errs, fmt.Errorf("faults: probabilities add up to %v, more than 1 (a request draws at most one fault)", sum))
	}
	if c.Bytes < 0 {
		errs = append(errs, fmt.Errorf("faults: Bytes %d is negative", c.Bytes))
	}
	if c.Every < 0 {
		errs = append(errs, fmt.Errorf("faults: Every %v is negative", c.Every))
	}
	return errors.Join(errs...)
}

// SpecHelp documents ParseSpec's syntax, for command-line help.
const SpecHelp = `comma-separated KIND=P[:OPT...] and global KEY=VALUE items.
KIND is cut (end the connection after a random number of response bytes),
stall (stop the response for a while after a random number of bytes),
500 (answer with a 500 InternalError Status), 429 (a 429 TooManyRequests
Status with Retry-After) or 410 (a list: a 410 Expired Status; a watch: an
ERROR event with a 410 Expired Status, injected at a frame boundary after a
random number of bytes); P is the probability per GET request, in [0,1],
the P of all kinds at most 1 in total; a watch draws again (cut, stall or
410) after every SIZE bytes of its stream that passed without a fault. OPTs: a bare duration (stall: how
long, default 2s; 429: Retry-After, default 1s), max=N (at most N faults of
this kind), every=D (at least D between two of this kind). Global keys:
seed=N (same seed, same draws; default 1), max=N (default max per kind,
1000; -1 unbounded), every=D, bytes=SIZE (random offsets are in [0,SIZE),
default 1Mi; k/Ki/M/Mi suffixes). Example:
cut=0.02,stall=0.01:2s,500=0.01,429=0.01,410=0.005,seed=7`

// ParseSpec parses a fault spec (see SpecHelp) into a Config without
// Upstream. An empty spec is an error: it would inject nothing.
func ParseSpec(spec string) (Config, error) {
	c := Config{Seed: 1, Rules: map[Kind]Rule{}}
	if strings.TrimSpace(spec) == "" {
		return c, errors.New("faults: empty spec (want e.g. cut=0.02,429=0.01,seed=7)")
	}
	var errs []error
	seen := map[string]bool{}
	for _, item := range strings.Split(spec, ",") {
		item = strings.TrimSpace(item)
		key, val, ok := strings.Cut(item, "=")
		if !ok || key == "" || val == "" {
			errs = append(errs, fmt.Errorf("faults: %q: want KIND=P[:OPT...] or KEY=VALUE", item))
			continue
		}
		if seen[key] {
			errs = append(errs, fmt.Errorf("faults: %q given twice", key))
			continue
		}
		seen[key] = true
		switch key {
		case "seed":
			n, err := strconv.ParseInt(val, 10, 64)
			if err != nil {
				errs = append(errs, fmt.Errorf("faults: seed=%q: not an integer", val))
			}
			c.Seed = n
			continue
		case "max":
			n, err := strconv.Atoi(val)
			if err != nil || n == 0 || n < -1 {
				errs = append(errs, fmt.Errorf("faults: max=%q: want a positive count, or -1 for unbounded", val))
			}
			c.Max = n
			continue
		case "every":
			d, err := time.ParseDuration(val)
			if err != nil || d < 0 {
				errs = append(errs, fmt.Errorf("faults: every=%q: want a non-negative duration such as 100ms", val))
			}
			c.Every = d
			continue
		case "bytes":
			q, err := resource.ParseQuantity(val)
			if err != nil || q.Value() < 1 {
				errs = append(errs, fmt.Errorf("faults: bytes=%q: want a positive size such as 64Ki or 1Mi", val))
				continue
			}
			c.Bytes = q.Value()
			continue
		}
		k, err := ParseKind(key)
		if err != nil {
			errs = append(errs, fmt.Errorf("faults: %q: unknown kind or key %q (kinds: %s; keys: seed, max, every, bytes)", item, key, strings.Join(kindNames[:], ", ")))
			continue
		}
		r, err := parseRule(k, val)
		if err != nil {
			errs = append(errs, fmt.Errorf("faults: %q: %w", item, err))
			continue
		}
		c.Rules[k] = r
	}
	if len(errs) == 0 && len(c.Rules) == 0 {
		errs = append(errs, fmt.Errorf("faults: %q names no fault kind (%s)", spec, strings.Join(kindNames[:], ", ")))
	}
	if len(errs) == 0 {
		// Upstream is the caller's; check the rest.
		v := c
		v.Upstream = &rest.Config{Host: "spec"}
		if err := v.validate(); err != nil {
			errs = append(errs, err)
		}
	}
	return c, errors.Join(errs...)
}

func parseRule(k Kind, val string) (Rule, error) {
	parts := strings.Split(val, ":")
	var r Rule
	p, err := strconv.ParseFloat(parts[0], 64)
	if err != nil || math.IsNaN(p) || p < 0 || p > 1 {
		return r, fmt.Errorf("probability %q is not a number in [0, 1]", parts[0])
	}
	r.P = p
	for _, o := range parts[1:] {
		switch name, v, hasEq := strings.Cut(o, "="); {
		case hasEq && name == "max":
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 {
				return r, fmt.Errorf("max=%q: want a positive count", v)
			}
			r.Max = n
		case hasEq && name == "every":
			d, err := time.ParseDuration(v)
			if err != nil || d < 0 {
				return r, fmt.Errorf("every=%q: want a non-negative duration", v)
			}
			r.Every = d
		case !hasEq:
			if k != Stall && k != TooManyRequests {
				return r, fmt.Errorf("a duration (%q) applies to stall and 429 only", o)
			}
			d, err := time.ParseDuration(o)
			if err != nil || d <= 0 {
				return r, fmt.Errorf("%q: want a positive duration such as 2s", o)
			}
			r.Duration = d
		default:
			return r, fmt.Errorf("unknown option %q (want a duration, max=N or every=D)", o)
		}
	}
	return r, nil
}

// String renders c's rules and keys as a spec that ParseSpec reads back.
func (c Config) String() string {
	var items []string
	for _, k := range Kinds() {
		r, ok := c.Rules[k]
		if !ok {
			continue
		}
		s := k.String() + "=" + strconv.FormatFloat(r.P, 'g', -1, 64)
		if r.Duration > 0 {
			s += ":" + r.Duration.String()
		}
		if r.Max > 0 {
			s += ":max=" + strconv.Itoa(r.Max)
		}
		if r.Every > 0 {
			s += ":every=" + r.Every.String()
		}
		items = append(items, s)
	}
	items = append(items, "seed="+strconv.FormatInt(c.Seed, 10))
	if c.Max != 0 {
		items = append(items, "max="+strconv.Itoa(c.Max))
	}
	if c.Every > 0 {
		items = append(items, "every="+c.Every.String())
	}
	if c.Bytes > 0 {
		items = append(items, "bytes="+strconv.FormatInt(c.Bytes, 10))
	}
	return strings.Join(items, ",")
}
