// Package workload reads weighted mixes of probe shapes (request size,
// reply size, hold, gap) from YAML or JSON and draws from them with a
// seeded generator: the weighted graph of sizes and delays iperf 2 lists as
// missing.
//
// A file is a list of entries, in YAML or JSON. Each has a weight (> 0,
// relative to the others), a size (request bytes, header included), and
// optionally a name, a reply_size (default: the request's size), a hold
// (the reflector waits before replying) and a gap (closed loop only: the
// least time from this probe to the next):
//
//	[{name: small, weight: 3, size: 100, reply_size: 512, hold: 1ms},
//	 {name: big, weight: 1, size: 1400, gap: 10ms}]
package workload

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"time"

	"sigs.k8s.io/yaml"
)

// Entry is one shape of probe in a mix.
type Entry struct {
	Name      string   `json:"name"`
	Weight    float64  `json:"weight"`
	Size      int      `json:"size"`
	ReplySize int      `json:"reply_size,omitempty"`
	Hold      Duration `json:"hold,omitempty"`
	Gap       Duration `json:"gap,omitempty"`
}

// Duration is a time.Duration written as "1ms" (or integer nanoseconds).
type Duration time.Duration

// UnmarshalJSON implements json.Unmarshaler.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		var n int64
		if err := json.Unmarshal(b, &n); err != nil {
			return fmt.Errorf("duration %s: want a string such as \"1ms\" or nanoseconds", b)
		}
		*d = Duration(n)
		return nil
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return err
	}
	*d = Duration(v)
	return nil
}

// MarshalJSON implements json.Marshaler: nanoseconds, as volley's JSON has
// every duration.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(int64(d)) }

// ErrBad says a workload file cannot be used.
var ErrBad = errors.New("workload: bad file")

// Limits bound the entries' sizes.
type Limits struct {
	MinSize, MaxSize int
}

// Load reads and checks the workload in path.
func Load(path string, lim Limits) ([]Entry, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Parse(b, lim)
}

// Parse reads and checks a workload in YAML or JSON.
func Parse(b []byte, lim Limits) ([]Entry, error) {
	var es []Entry
	if err := yaml.UnmarshalStrict(b, &es); err != nil {
		var top any
		if yaml.Unmarshal(b, &top) == nil {
			if _, isList := top.([]any); !isList {
				return nil, fmt.Errorf("%w: want a list of entries ([{weight: 1, size: 100}, ...] or one \"- weight: 1\" item per entry), got a %s", ErrBad, kindOf(top))
			}
		}
		return nil, fmt.Errorf("%w: %v", ErrBad, err)
	}
	if len(es) == 0 {
		return nil, fmt.Errorf("%w: no entries", ErrBad)
	}
	if len(es) > 1000 {
		return nil, fmt.Errorf("%w: %d entries, at most 1000", ErrBad, len(es))
	}
	for i := range es {
		e := &es[i]
		if e.Name == "" {
			e.Name = fmt.Sprintf("entry %d", i+1)
		}
		switch {
		case !(e.Weight > 0) || e.Weight > 1e9:
			return nil, fmt.Errorf("%w: %s: weight %v (want more than 0)", ErrBad, e.Name, e.Weight)
		case e.Size < lim.MinSize || e.Size > lim.MaxSize:
			return nil, fmt.Errorf("%w: %s: size %d (want %d to %d)", ErrBad, e.Name, e.Size, lim.MinSize, lim.MaxSize)
		case e.ReplySize != 0 && (e.ReplySize < lim.MinSize || e.ReplySize > lim.MaxSize):
			return nil, fmt.Errorf("%w: %s: reply_size %d (want %d to %d)", ErrBad, e.Name, e.ReplySize, lim.MinSize, lim.MaxSize)
		case e.Hold < 0 || e.Gap < 0:
			return nil, fmt.Errorf("%w: %s: negative hold or gap", ErrBad, e.Name)
		}
	}
	return es, nil
}

// Picker draws entries in proportion to their weights.
type Picker struct {
	cum []float64
	rng *rand.Rand
}

// NewPicker returns a picker over es seeded with seed.
func NewPicker(es []Entry, seed uint64) *Picker {
	p := &Picker{cum: make([]float64, len(es)), rng: rand.New(rand.NewPCG(seed, seed^0x5851f42d4c957f2d))}
	var sum float64
	for i, e := range es {
		sum += e.Weight
		p.cum[i] = sum
	}
	return p
}

// Pick returns the index of the next entry.
func (p *Picker) Pick() int {
	x := p.rng.Float64() * p.cum[len(p.cum)-1]
	lo, hi := 0, len(p.cum)-1
	for lo < hi {
		mid := (lo + hi) / 2
		if x < p.cum[mid] {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return lo
}

// kindOf names what a YAML document holds at its top.
func kindOf(v any) string {
	switch v.(type) {
	case map[string]any:
		return "mapping"
	case nil:
		return "empty document"
	}
	return "single value"
}
