// A target's schedule: its defaults, its checks, and the client
// configuration it becomes.

package monitor

import (
	"bytes"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/volley-net/volley/internal/client"
	"github.com/volley-net/volley/internal/transport"
	"github.com/volley-net/volley/internal/units"
)

// Defaults of a Schedule's zero fields (see Defaults).
const (
	DefaultRate     = 1.0
	DefaultInterval = time.Second
	DefaultTimeout  = client.DefaultTimeout
	DefaultSize     = client.DefaultSize
)

// Bounds of a Schedule, beyond the client's own (client.MaxRate,
// client.MinSize to client.MaxSize, client.MinTimeout to
// client.MaxTimeout).
const (
	// MinInterval and MaxInterval bound how often figures are published.
	MinInterval = 10 * time.Millisecond
	MaxInterval = time.Hour
	// MinDuration is a round's shortest length.
	MinDuration = 100 * time.Millisecond
	// MaxLabels is the most labels a target carries, MaxLabelValue the
	// longest value in bytes.
	MaxLabels     = 16
	MaxLabelValue = 128
	// MaxLabelNames is the most label names of a whole set: every series
	// carries each of them.
	MaxLabelNames = 32
	// MaxNameBytes is the longest name: a DNS target's NAME/ADDRESS fits.
	MaxNameBytes = 192
)

// forever is a continuous target's client.Config.Duration and
// Reconnect: longer than any process lives, short enough that a clock
// reading plus it does not overflow.
const forever = 50 * 365 * 24 * time.Hour

// Defaults returns s with its zero fields filled: Rate DefaultRate,
// Interval DefaultInterval, Timeout DefaultTimeout, Size DefaultSize (the
// client's), and Every = Duration when Duration is set.
func Defaults(s Schedule) Schedule {
	if s.Rate == 0 {
		s.Rate = DefaultRate
	}
	if s.Interval == 0 {
		s.Interval = DefaultInterval
	}
	if s.Timeout == 0 {
		s.Timeout = DefaultTimeout
	}
	if s.Size == 0 {
		s.Size = DefaultSize
	}
	if s.Duration > 0 && s.Every == 0 {
		s.Every = s.Duration
	}
	return s
}

// checkSchedule checks s (defaults filled) and names the field that
// breaks a rule.
func checkSchedule(s Schedule) error {
	switch {
	case s.Rate < 0 || s.Rate > client.MaxRate:
		return fmt.Errorf("rate %s: want more than 0 and at most %s probes/s", units.FormatRate(s.Rate), units.FormatRate(client.MaxRate))
	case s.Size < client.MinSize || s.Size > client.MaxSize:
		return fmt.Errorf("size %d: want %d to %d bytes", s.Size, client.MinSize, client.MaxSize)
	case s.ReplySize != 0 && (s.ReplySize < client.MinSize || s.ReplySize > client.MaxSize):
		return fmt.Errorf("reply_size %d: want 0 (the probe's size) or %d to %d bytes", s.ReplySize, client.MinSize, client.MaxSize)
	case s.Timeout < client.MinTimeout || s.Timeout > client.MaxTimeout:
		return fmt.Errorf("timeout %s: want %s to %s", units.FormatDuration(s.Timeout), units.FormatDuration(client.MinTimeout), units.FormatDuration(client.MaxTimeout))
	case s.Interval < MinInterval || s.Interval > MaxInterval:
		return fmt.Errorf("interval %s: want %s to %s", units.FormatDuration(s.Interval), units.FormatDuration(MinInterval), units.FormatDuration(MaxInterval))
	case s.Timeout > client.MaxWaitIntervals*s.Interval:
		// Past it, some probes' fates would reach no interval, and the
		// counters are the intervals' sums.
		return fmt.Errorf("timeout %s: want at most %d intervals (interval %s), so that every probe's fate is counted",
			units.FormatDuration(s.Timeout), client.MaxWaitIntervals, units.FormatDuration(s.Interval))
	case s.Duration < 0 || s.Duration > 0 && s.Duration < MinDuration:
		return fmt.Errorf("duration %s: want 0 (continuous) or at least %s", units.FormatDuration(s.Duration), units.FormatDuration(MinDuration))
	case s.Duration == 0 && s.Every != 0:
		return fmt.Errorf("every %s: rounds need a duration (0: continuous, with no rounds)", units.FormatDuration(s.Every))
	case s.Every < s.Duration:
		return fmt.Errorf("every %s: want at least the duration, %s", units.FormatDuration(s.Every), units.FormatDuration(s.Duration))
	}
	return nil
}

// labelName is a Prometheus label name.
var labelName = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`)

// reservedLabels are the label names volley or Prometheus use themselves;
// meshLabels are the mesh's, which only Mesh sets.
var (
	reservedLabels = []string{"target", "direction", "le", "quantile", "instance", "job", "source"}
	meshLabels     = []string{"source_zone", "target_zone"}
)

// checkTargetLabels checks a target's labels; source_zone and target_zone
// are the mesh's, and allowed here (a file's reader refuses them).
func checkTargetLabels(labels map[string]string) error {
	if len(labels) > MaxLabels {
		return fmt.Errorf("labels: %d of them, want at most %d", len(labels), MaxLabels)
	}
	for name, v := range labels {
		if err := CheckLabel(name, v, true); err != nil {
			return err
		}
	}
	return nil
}

// CheckLabel checks one label: its name must be a Prometheus label name,
// not start with "__" and not be one volley or Prometheus uses (nor the
// mesh's, unless mesh); its value at most MaxLabelValue bytes.
func CheckLabel(name, value string, mesh bool) error {
	switch {
	case !labelName.MatchString(name) || strings.HasPrefix(name, "__"):
		return fmt.Errorf("label %q: want a name of letters, digits and _ (not first a digit, nor __ first)", name)
	case slices.Contains(reservedLabels, name) || !mesh && slices.Contains(meshLabels, name):
		return fmt.Errorf("label %q: volley or Prometheus uses that name (reserved: %s)", name, strings.Join(append(slices.Clone(reservedLabels), meshLabels...), ", "))
	case len(value) > MaxLabelValue:
		return fmt.Errorf("label %q: value of %d bytes, want at most %d", name, len(value), MaxLabelValue)
	}
	return nil
}

// monitorSchemes are the transports a target may use.
var monitorSchemes = []string{"udp", "tcp", "unix", "unixgram", "dbus"}

// checkTarget checks t and returns it with its schedule's defaults
// filled, its labels copied, and its address parsed; the error names the
// target and the field.
func checkTarget(t Target) (Target, transport.Target, error) {
	fail := func(err error) (Target, transport.Target, error) {
		return t, transport.Target{}, fmt.Errorf("target %q: %w", t.Name, err)
	}
	switch {
	case t.Name == "":
		return t, transport.Target{}, fmt.Errorf("target with url %q: no name", t.URL)
	case !utf8.ValidString(t.Name) || len(t.Name) > MaxNameBytes || strings.ContainsFunc(t.Name, unicode.IsControl):
		// The name is every series' target label, and in log lines.
		return t, transport.Target{}, fmt.Errorf("target %q: want a name of at most %d bytes of UTF-8, without control characters", t.Name, MaxNameBytes)
	}
	addr, err := transport.ParseTarget(t.URL)
	if err != nil {
		return fail(fmt.Errorf("url %q: %w", t.URL, err))
	}
	if !slices.Contains(monitorSchemes, addr.Scheme) {
		return fail(fmt.Errorf("url %q: want udp://, tcp://, unix://, unixgram:// or dbus:// (a volley reflector)", t.URL))
	}
	if err := checkTargetLabels(t.Labels); err != nil {
		return fail(err)
	}
	t.Schedule = Defaults(t.Schedule)
	if err := checkSchedule(t.Schedule); err != nil {
		return fail(err)
	}
	// The client's own rules, as its command line would apply them
	// (their errors name its flags).
	if err := clientConfig(&t, addr, t.Schedule.Rate, 0, nil, nil).Check(client.Command{Target: addr}); err != nil {
		return fail(err)
	}
	t.Labels = maps.Clone(t.Labels)
	t.Schedule.Key = bytes.Clone(t.Schedule.Key)
	return t, addr, nil
}

// Same reports whether a and b are the same target: name, URL, labels
// and schedule. A Sink is stopped with a target that is the Same as the
// one it was started with (not always the same pointer).
func (a *Target) Same(b *Target) bool {
	sa, sb := a.Schedule, b.Schedule
	return a.Name == b.Name && a.URL == b.URL && maps.Equal(a.Labels, b.Labels) &&
		sa.Rate == sb.Rate && sa.Poisson == sb.Poisson && sa.Size == sb.Size && sa.ReplySize == sb.ReplySize &&
		sa.Timeout == sb.Timeout && sa.Interval == sb.Interval && sa.Duration == sb.Duration &&
		sa.Every == sb.Every && bytes.Equal(sa.Key, sb.Key)
}

// clientConfig is what t's measurement runs: at rate (t's, scaled to
// the process's cap), continuously or for one round, its figures
// streamed to h and its replies to obs.
func clientConfig(t *Target, addr transport.Target, rate float64, seed uint64, obs client.Observer, h client.Handler) client.Config {
	s := t.Schedule
	cfg := client.Config{
		Rate:            rate,
		Poisson:         s.Poisson,
		Seed:            seed,
		Size:            s.Size,
		ReplySize:       s.ReplySize,
		Timeout:         s.Timeout,
		ReportInterval:  s.Interval,
		Key:             s.Key,
		Shared:          true,
		StreamIntervals: true,
		Observer:        obs,
		Handler:         h,
		Duration:        s.Duration,
	}
	if s.Duration == 0 {
		// Its intervals are its figures: no summary is read.
		cfg.Duration, cfg.Endless = forever, true
		if !addr.Stream() {
			// A lost session is reopened for ever, probes counting lost
			// meanwhile; a broken stream cannot be, and the runner dials
			// it again.
			cfg.Reconnect = forever
		}
	}
	return cfg
}
