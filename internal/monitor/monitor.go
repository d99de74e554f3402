// Package monitor measures a set of targets for ever: each with its own
// schedule, through the client's engine (one client.Run per target, its
// intervals streamed and its replies observed), with the set changed while
// it runs (flags, a YAML file reloaded, DNS names re-resolved, a fleet's
// peer list). What it measures goes to a Sink (the Prometheus exporter, a
// JSON-lines writer); nothing it keeps grows with time.
package monitor

import (
	"time"

	"github.com/volley-net/volley/internal/client"
	"github.com/volley-net/volley/internal/result"
)

// Target is one thing to measure.
type Target struct {
	// Name is unique within a set: every series of the target carries it
	// as its "target" label.
	Name string
	// URL is where to measure: udp://, tcp://, unix:// or dbus://, as
	// volley client takes it (transport.ParseTarget).
	URL string
	// Labels are the user's, added to every series of the target. Their
	// names are Prometheus label names that volley does not use itself.
	Labels map[string]string
	// Source says where the target came from: "flag", "file", "dns" or
	// "peers".
	Source string
	// Schedule is how it is measured.
	Schedule Schedule
}

// Schedule is how one target is measured. Zero fields take the defaults
// (see Defaults).
type Schedule struct {
	// Rate is the probes per second, sent open loop (on schedule,
	// replies or not). Poisson draws the gaps from an exponential
	// distribution instead of a fixed one.
	Rate    float64
	Poisson bool
	// Size is each probe's size in bytes, header included; ReplySize
	// the reply's (0: the probe's).
	Size      int
	ReplySize int
	// Timeout is how long a probe waits for its reply before it is lost.
	Timeout time.Duration
	// Interval is how often the target's figures are published: its
	// counters move at each interval's end.
	Interval time.Duration
	// Duration, when set, measures in rounds: each lasts Duration and
	// one starts every Every (smokeping's "pings every step"); zero
	// measures continuously, one session for as long as the target is
	// in the set.
	Duration time.Duration
	Every    time.Duration
	// Key signs every message (the reflector's --key).
	Key []byte
}

// Sink hears what the monitor measures: a target as it starts being
// measured, and as it leaves the set.
type Sink interface {
	// Start returns what hears target t's measurements. A target whose
	// name, URL, labels or schedule changed is stopped and started again.
	Start(t *Target) Recorder
	// Stop: t left the set; its series go.
	Stop(t *Target)
}

// Recorder hears one target's measurements, from the goroutines that
// measure it: each reply as it is recorded (client.Observer, on the
// per-probe path: it must not block or allocate), each interval as it
// ends, and the session's state.
type Recorder interface {
	client.Observer
	// Interval receives each interval of the target's measurement as
	// it ends: its counts are final (see result.Counts).
	Interval(iv result.Interval)
	// Session says whether the target answers: open is true once a
	// session is open, false with the error when it is lost or could
	// not be opened.
	Session(open bool, err error)
}

// Health hears how the monitor itself is doing.
type Health interface {
	// Targets is the number of targets in the set, and how many answer.
	Targets(n, up int)
	// Lag is the largest send error (a probe's actual send time minus its
	// scheduled one) of any target's last interval.
	Lag(d time.Duration)
	// Reload says a source (a file, a DNS name) was read again, and
	// whether that worked; a failure keeps the last good set.
	Reload(source string, err error)
	// Forget says a source left (a DNS name no target names any more):
	// what Reload said of it goes.
	Forget(source string)
	// RateScale is the factor every target's rate was scaled by to keep
	// the process under its cap of probes per second (1: none).
	RateScale(f float64)
}
