package monitor

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strings"
	"syscall"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/volley-net/volley/internal/transport"
	"github.com/volley-net/volley/internal/units"
	"github.com/volley-net/volley/internal/workload"
)

// ErrFile says a targets or peers file is not as it should be; the error
// names the file and the line.
var ErrFile = errors.New("monitor: bad targets file")

// Bounds on what a targets file may hold: it is read again at every
// change, and each target costs a goroutine and its series.
const (
	// MaxFileBytes is the largest targets file read.
	MaxFileBytes = 4 << 20
	// MaxFileTargets is the most targets (or peers) one file may list.
	MaxFileTargets = 10000
)

// Peer is a target as a targets or peers file lists it: the target, and
// the zone it is in (peer lists only; see Mesh).
type Peer struct {
	Target
	// Zone groups peers (a rack, a data centre): an agent probes every
	// peer of its own zone. Empty: no zone.
	Zone string
}

// FileOptions say how a targets file is read.
type FileOptions struct {
	// Base is the schedule of the flags: the file's defaults section
	// overrides it, and each entry the defaults.
	Base Schedule
	// Zones allows the zone field (an agent's peer list); without it, a
	// zone is an error.
	Zones bool
	// Source is the Target.Source of the file's targets ("file" when
	// empty; "peers" for an agent's list).
	Source string
}

// The fields of the file: top-level, the schedule's (in defaults and in
// each entry), and an entry's own.
var (
	fileTopFields      = []string{"defaults", "targets", "peers"}
	fileScheduleFields = []string{"rate", "size", "interval", "timeout", "duration", "every", "poisson", "reply_size", "key_file"}
	fileEntryFields    = []string{"name", "url", "labels", "zone"}
)

// checkFileLabel checks one label of a file's entry: as Monitor.Set
// does, and the mesh's source_zone and target_zone are not the user's to
// set.
func checkFileLabel(name, value string) error { return CheckLabel(name, value, false) }

// readFileBounded reads at most MaxFileBytes of the file at path (through
// symbolic links, as a Kubernetes ConfigMap's are).
func readFileBounded(path string) ([]byte, error) {
	// Only a regular file: a FIFO would block the reader (and every
	// reload after it) until a writer came.
	if st, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrFile, err)
	} else if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%w: %s: not a regular file (%s)", ErrFile, path, st.Mode().Type())
	}
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrFile, err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, MaxFileBytes+1))
	if err != nil {
		return nil, err
	}
	if len(b) > MaxFileBytes {
		return nil, fmt.Errorf("%w: %s: larger than %d bytes", ErrFile, path, MaxFileBytes)
	}
	return b, nil
}

// LoadFile reads the targets or peers file at path (see ParseFile).
func LoadFile(path string, opt FileOptions) ([]Peer, error) {
	b, err := readFileBounded(path)
	if err != nil {
		return nil, err
	}
	return ParseFile(path, b, opt)
}

// ParseFile reads the targets file b, named name in its errors:
//
//	defaults: {rate: 10, size: 64}  # optional: any schedule field
//	targets:                        # or peers:
//	  - name: db-1                  # optional: the URL
//	    url: udp://10.0.0.5:7766
//	    labels: {rack: r12}
//	    rate: 20                    # any schedule field
//	    zone: eu-1                  # peer lists only
//
// Its errors wrap ErrFile and name the file and the line.
func ParseFile(name string, b []byte, opt FileOptions) ([]Peer, error) {
	ps, err := parseFile(b, opt)
	if err == nil && len(ps) == 0 {
		// A file caught while a writer that truncates first rewrites it
		// would otherwise stop every target until the next read.
		err = errors.New("no targets (a file being written looks so; an empty list is refused, and the last good set kept)")
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrFile, name, err)
	}
	return ps, nil
}

// parseFile is ParseFile without the file's name in the errors.
func parseFile(b []byte, opt FileOptions) ([]Peer, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		// "yaml: line 3: mapping values are not allowed in this context"
		return nil, errors.New(strings.TrimPrefix(err.Error(), "yaml: "))
	}
	if doc.Kind == 0 || len(doc.Content) == 0 || isNull(doc.Content[0]) {
		return nil, nil // an empty file: no targets
	}
	top := doc.Content[0]
	at, err := fileFields(top, "the file", fileTopFields)
	if err != nil {
		return nil, err
	}
	list := at["targets"]
	if p := at["peers"]; p != nil {
		if list != nil {
			return nil, fmt.Errorf("line %d: both targets and peers: want one list", p.Line)
		}
		list = p
	}
	sched := opt.Base
	if d := at["defaults"]; d != nil && !isNull(d) {
		fs, err := fileFields(d, "defaults", fileScheduleFields)
		if err != nil {
			return nil, err
		}
		if err := applySchedule(&sched, fs, "defaults"); err != nil {
			return nil, err
		}
	}
	if list == nil || isNull(list) {
		return nil, nil
	}
	if list.Kind != yaml.SequenceNode {
		return nil, fmt.Errorf("line %d: targets: want a list (one \"- url: ...\" item per target), got %s", list.Line, workload.KindOf(list))
	}
	if len(list.Content) > MaxFileTargets {
		return nil, fmt.Errorf("line %d: %d targets, at most %d", list.Line, len(list.Content), MaxFileTargets)
	}
	source := opt.Source
	if source == "" {
		source = "file"
	}
	ps := make([]Peer, 0, len(list.Content))
	lines := map[string]int{} // each name's line, for duplicates
	for i, n := range list.Content {
		p, err := parseEntry(n, i, sched, opt)
		if err != nil {
			return nil, err
		}
		if l, ok := lines[p.Name]; ok {
			return nil, fmt.Errorf("line %d: target %q: name already given at line %d (names must be unique; the name defaults to the URL)", n.Line, p.Name, l)
		}
		lines[p.Name] = n.Line
		p.Source = source
		ps = append(ps, p)
	}
	return ps, nil
}

// parseEntry reads the i-th entry of the list from n, on the schedule
// sched (the base and the defaults).
func parseEntry(n *yaml.Node, i int, sched Schedule, opt FileOptions) (Peer, error) {
	what := fmt.Sprintf("target %d", i+1)
	fs, err := fileFields(n, what, append(slices.Clip(fileEntryFields), fileScheduleFields...))
	if err != nil {
		return Peer{}, err
	}
	var p Peer
	for _, f := range []string{"name", "url", "zone"} {
		if v := fs[f]; v != nil && v.Kind != yaml.ScalarNode {
			return Peer{}, fmt.Errorf("line %d: %s: %s: want a single value, got %s", v.Line, what, f, workload.KindOf(v))
		}
	}
	u := fs["url"]
	if u == nil || u.Value == "" {
		return Peer{}, fmt.Errorf("line %d: %s: no url (want url: udp://HOST:PORT, tcp://, unix:///PATH or dbus://session)", n.Line, what)
	}
	if t, err := transport.ParseTarget(u.Value); err != nil {
		return Peer{}, fmt.Errorf("line %d: %s: url: %v", u.Line, what, err)
	} else if !slices.Contains(monitorSchemes, t.Scheme) {
		return Peer{}, fmt.Errorf("line %d: %s: url %s: a monitor measures %s:// targets, not %s://", u.Line, what, u.Value, strings.Join(monitorSchemes, "://, "), t.Scheme)
	}
	p.URL, p.Name = u.Value, u.Value
	if v := fs["name"]; v != nil && v.Value != "" {
		p.Name = v.Value
	}
	if len(p.Name) > MaxLabelValue {
		return Peer{}, fmt.Errorf("line %d: %s: name of %d bytes, at most %d (it is the target label's value)", n.Line, what, len(p.Name), MaxLabelValue)
	}
	what = fmt.Sprintf("target %q", p.Name)
	if v := fs["zone"]; v != nil {
		if !opt.Zones {
			return Peer{}, fmt.Errorf("line %d: %s: zone is for an agent's peer list (--peers), not a targets file", v.Line, what)
		}
		if len(v.Value) > MaxLabelValue {
			return Peer{}, fmt.Errorf("line %d: %s: zone of %d bytes, at most %d", v.Line, what, len(v.Value), MaxLabelValue)
		}
		p.Zone = v.Value
	}
	if v := fs["labels"]; v != nil && !isNull(v) {
		if p.Labels, err = parseLabels(v, what); err != nil {
			return Peer{}, err
		}
	}
	p.Schedule = sched
	p.Schedule.Key = slices.Clone(sched.Key)
	if err := applySchedule(&p.Schedule, fs, what); err != nil {
		return Peer{}, err
	}
	return p, nil
}

// parseLabels reads a target's labels from the mapping n.
func parseLabels(n *yaml.Node, what string) (map[string]string, error) {
	if n.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("line %d: %s: labels: want a mapping such as {rack: r12}, got %s", n.Line, what, workload.KindOf(n))
	}
	if len(n.Content)/2 > MaxLabels {
		return nil, fmt.Errorf("line %d: %s: %d labels, at most %d", n.Line, what, len(n.Content)/2, MaxLabels)
	}
	labels := make(map[string]string, len(n.Content)/2)
	for k := 0; k+1 < len(n.Content); k += 2 {
		key, val := n.Content[k], n.Content[k+1]
		if key.Kind != yaml.ScalarNode || val.Kind != yaml.ScalarNode {
			return nil, fmt.Errorf("line %d: %s: labels: want name: value pairs of single values", key.Line, what)
		}
		if _, ok := labels[key.Value]; ok {
			return nil, fmt.Errorf("line %d: %s: label %s given twice", key.Line, what, key.Value)
		}
		if err := checkFileLabel(key.Value, val.Value); err != nil {
			return nil, fmt.Errorf("line %d: %s: %v", key.Line, what, err)
		}
		labels[key.Value] = val.Value
	}
	return labels, nil
}

// fileFields returns the fields of the mapping n by name, refusing names
// not in allowed and names given twice; what names n in the errors.
func fileFields(n *yaml.Node, what string, allowed []string) (map[string]*yaml.Node, error) {
	if n.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("line %d: %s: want a mapping of %s, got %s", n.Line, what, strings.Join(allowed, ", "), workload.KindOf(n))
	}
	at := map[string]*yaml.Node{}
	for k := 0; k+1 < len(n.Content); k += 2 {
		key, val := n.Content[k], n.Content[k+1]
		if !slices.Contains(allowed, key.Value) {
			return nil, fmt.Errorf("line %d: %s: unknown field %q (want %s)", key.Line, what, key.Value, strings.Join(allowed, ", "))
		}
		if at[key.Value] != nil {
			return nil, fmt.Errorf("line %d: %s: %s given twice", key.Line, what, key.Value)
		}
		at[key.Value] = val
	}
	return at, nil
}

// applySchedule sets the schedule fields of fs on s; what names the
// entry in the errors. It checks units and signs only: the monitor's Set
// checks the rest.
func applySchedule(s *Schedule, fs map[string]*yaml.Node, what string) error {
	for _, f := range fileScheduleFields {
		v := fs[f]
		if v == nil {
			continue
		}
		if v.Kind != yaml.ScalarNode {
			return fmt.Errorf("line %d: %s: %s: want a single value, got %s", v.Line, what, f, workload.KindOf(v))
		}
		if err := applyField(s, f, v.Value); err != nil {
			return fmt.Errorf("line %d: %s: %s: %v", v.Line, what, f, err)
		}
	}
	return nil
}

// applyField sets field f of s to the value v.
func applyField(s *Schedule, f, v string) error {
	switch f {
	case "rate":
		r, err := units.ParseRate(v)
		if err != nil || r < 0 || r > math.MaxInt32 {
			return fmt.Errorf("%q: want probes per second, 0 or more, such as 10 or 1k", v)
		}
		s.Rate = r
	case "size", "reply_size":
		b, err := units.ParseBytes(v)
		if err != nil || b > math.MaxInt32 {
			return fmt.Errorf("%q: want a number of bytes, such as 64 or 1K", v)
		}
		if f == "size" {
			s.Size = int(b)
		} else {
			s.ReplySize = int(b)
		}
	case "interval", "timeout", "duration", "every":
		// As the flags: --timeout wants a unit, the others take bare
		// seconds as iperf's -t and -i.
		d, err := units.ParseDuration(v, f != "timeout")
		if err != nil || d < 0 {
			return fmt.Errorf("%q: want a duration of 0 or more, such as 1s or 500ms", v)
		}
		*durationField(s, f) = d
	case "poisson":
		switch strings.ToLower(v) {
		case "true", "yes", "on":
			s.Poisson = true
		case "false", "no", "off":
			s.Poisson = false
		default:
			return fmt.Errorf("%q: want true or false", v)
		}
	case "key_file":
		k, err := readKey(v)
		if err != nil {
			return err
		}
		s.Key = k
	}
	return nil
}

// durationField returns the field of s that f names.
func durationField(s *Schedule, f string) *time.Duration {
	switch f {
	case "interval":
		return &s.Interval
	case "timeout":
		return &s.Timeout
	case "duration":
		return &s.Duration
	}
	return &s.Every
}

// readKey reads the key in the file at path, as the reflector's
// --key-file: its trailing newline is not part of it.
func readKey(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, 64<<10))
	if err != nil {
		return nil, err
	}
	b = bytes.TrimRight(b, "\r\n")
	if len(b) == 0 {
		return nil, fmt.Errorf("%s is empty", path)
	}
	return b, nil
}

// isNull reports whether n is YAML's null (nothing after the colon).
func isNull(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.Tag == "!!null"
}
