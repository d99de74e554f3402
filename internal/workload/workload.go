// Package workload reads weighted mixes of probe shapes (request size,
// reply size, hold, gap) from YAML or JSON and draws from them with a
// seeded generator: the weighted graph of sizes and delays iperf 2 lists as
// missing.
//
// A file is a list of entries, in YAML or JSON. Each entry has:
//
//	weight      required: a number above 0, the entry's share relative to
//	            the others' (3 and 1: three of every four probes)
//	size        required: the request's bytes, volley's 64-byte header
//	            included; K, M suffixes as the flags' (1K is 1024)
//	name        the entry's name in the results (default "entry N")
//	reply_size  the reply's bytes (default: the request's size)
//	hold        how long the reflector waits before replying: 0, or 1us or
//	            more (1ms, 250us; a bare integer is nanoseconds, as
//	            volley's JSON writes durations)
//	gap         closed loop only: the least time from this probe to the
//	            next, as hold's
//
// For example, in YAML (examples/workload.yaml in the repository is a
// commented one):
//
//	# two entries: three small probes for every big one
//	- {name: small, weight: 3, size: 100, reply_size: 512, hold: 1ms}
//	- {name: big, weight: 1, size: 1K, gap: 10ms}
//
// or in JSON:
//
//	[{"name": "small", "weight": 3, "size": 100, "reply_size": 512, "hold": "1ms"},
//	 {"name": "big", "weight": 1, "size": "1K", "gap": "10ms"}]
//
// Mistakes are reported with their line: "line 4: big: size 10 (want 64
// to 65000)".
package workload

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/volley-net/volley/internal/units"
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

// maxEntries bounds a file's entries.
const maxEntries = 1000

// fields are an entry's keys, in the order errors list them.
var fields = []string{"weight", "size", "name", "reply_size", "hold", "gap"}

// Load reads and checks the workload in path.
func Load(path string, lim Limits) ([]Entry, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Parse(b, lim)
}

// Parse reads and checks a workload in YAML or JSON (which YAML reads
// too). Its errors wrap ErrBad and name the line of the mistake.
func Parse(b []byte, lim Limits) ([]Entry, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		// "yaml: line 3: mapping values are not allowed in this context"
		return nil, fmt.Errorf("%w: %s", ErrBad, strings.TrimPrefix(err.Error(), "yaml: "))
	}
	if doc.Kind == 0 || len(doc.Content) == 0 {
		return nil, fmt.Errorf("%w: no entries (want a list such as [{weight: 1, size: 100}])", ErrBad)
	}
	top := doc.Content[0]
	if top.Kind != yaml.SequenceNode {
		return nil, fmt.Errorf("%w: line %d: want a list of entries ([{weight: 1, size: 100}, ...] or one \"- weight: 1\" item per entry), got %s", ErrBad, top.Line, KindOf(top))
	}
	if len(top.Content) == 0 {
		return nil, fmt.Errorf("%w: line %d: no entries", ErrBad, top.Line)
	}
	if len(top.Content) > maxEntries {
		return nil, fmt.Errorf("%w: %d entries, at most %d", ErrBad, len(top.Content), maxEntries)
	}
	es := make([]Entry, len(top.Content))
	for i, n := range top.Content {
		if err := parseEntry(n, i, &es[i], lim); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrBad, err)
		}
	}
	return es, nil
}

// parseEntry reads the i-th entry from n and checks it.
func parseEntry(n *yaml.Node, i int, e *Entry, lim Limits) error {
	if n.Kind != yaml.MappingNode {
		return fmt.Errorf("line %d: entry %d: want a mapping such as {weight: 1, size: 100}, got %s", n.Line, i+1, KindOf(n))
	}
	e.Name = fmt.Sprintf("entry %d", i+1)
	at := map[string]*yaml.Node{} // each field's value
	for k := 0; k+1 < len(n.Content); k += 2 {
		key, val := n.Content[k], n.Content[k+1]
		if !slices.Contains(fields, key.Value) {
			return fmt.Errorf("line %d: entry %d: unknown field %q (want %s)", key.Line, i+1, key.Value, strings.Join(fields, ", "))
		}
		if at[key.Value] != nil {
			return fmt.Errorf("line %d: entry %d: %s given twice", key.Line, i+1, key.Value)
		}
		if val.Kind != yaml.ScalarNode {
			return fmt.Errorf("line %d: entry %d: %s: want a single value, got %s", val.Line, i+1, key.Value, KindOf(val))
		}
		at[key.Value] = val
	}
	if v := at["name"]; v != nil && v.Value != "" {
		e.Name = v.Value
	}
	for _, f := range []string{"weight", "size"} {
		if at[f] == nil {
			return fmt.Errorf("line %d: %s: no %s (every entry needs a weight and a size)", n.Line, e.Name, f)
		}
	}
	bad := func(v *yaml.Node, f, want string) error {
		return fmt.Errorf("line %d: %s: %s %s (want %s)", v.Line, e.Name, f, v.Value, want)
	}
	sizeRange := fmt.Sprintf("%d to %d bytes; K, M suffixes as 1K", lim.MinSize, lim.MaxSize)
	for _, f := range fields {
		v := at[f]
		if v == nil {
			continue
		}
		switch f {
		case "weight":
			w, err := strconv.ParseFloat(v.Value, 64)
			if err != nil || !(w > 0) || w > 1e9 {
				return bad(v, f, "a number above 0, relative to the other entries' weights")
			}
			e.Weight = w
		case "size", "reply_size":
			b, err := units.ParseBytes(v.Value)
			if err != nil || b < int64(lim.MinSize) || b > int64(lim.MaxSize) {
				return bad(v, f, sizeRange)
			}
			if f == "size" {
				e.Size = int(b)
			} else {
				e.ReplySize = int(b)
			}
		case "hold", "gap":
			// Below 1µs is no hold (--hold's least) nor gap, and most
			// likely a unit left out: "hold: 2" would be 2ns.
			d, err := parseDuration(v.Value)
			if err != nil || d < 0 || (d > 0 && d < time.Microsecond) {
				return bad(v, f, "a duration such as 1ms or 250us: 0, or 1us or more")
			}
			if f == "hold" {
				e.Hold = Duration(d)
			} else {
				e.Gap = Duration(d)
			}
		}
	}
	return nil
}

// parseDuration reads a duration with a unit, or integer nanoseconds.
func parseDuration(s string) (time.Duration, error) {
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return time.Duration(n), nil
	}
	return units.ParseDuration(s, false)
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

// KindOf names what a YAML node holds, for errors: "a mapping", "a
// list", "an alias" or "a single value".
func KindOf(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.AliasNode:
		return "an alias"
	}
	return "a single value"
}
