package client

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/volley-net/volley/internal/clock"
	"github.com/volley-net/volley/internal/result"
	"github.com/volley-net/volley/internal/transport"
	"github.com/volley-net/volley/internal/tstamp"
	"github.com/volley-net/volley/internal/units"
	"github.com/volley-net/volley/internal/wire"
	"github.com/volley-net/volley/internal/workload"
)

// Defaults for Config's zero fields.
const (
	DefaultDuration       = 5 * time.Second
	DefaultSize           = wire.HeaderLen
	DefaultTimeout        = time.Second
	DefaultReportInterval = time.Second
	DefaultHandshakeTries = 3
	// MaxWindow bounds --window: the probe history must be larger than the
	// window for late replies and duplicates to be told apart.
	MaxWindow = 1 << 14
	// MaxSize is the largest request or reply over UDP.
	MaxSize = 65000
	// MinSize is the smallest request or reply: the header.
	MinSize = wire.HeaderLen
)

func tagWord(key []byte) string {
	if len(key) > 0 {
		return " and authentication tag"
	}
	return ""
}

// MaxRate is the highest open-loop rate: one probe a microsecond.
const MaxRate = 1_000_000

// openLoop reports whether the run sends on a schedule (after the
// defaults: see OpenLoop).
func (c Config) openLoop() bool { return c.Rate > 0 || c.SendInterval > 0 }

// OpenLoop reports whether the run will send on a schedule, with a sender
// thread beside each receiver: given a rate (max too) or a send interval,
// or one-way.
func (c Config) OpenLoop() bool { return c.openLoop() || c.Unpaced || c.OneWay }

// DefaultPercentiles are the percentiles reported unless told otherwise.
var DefaultPercentiles = []float64{50, 90, 99, 99.9, 99.99}

// Errors a run can end with. Run wraps them with the reflector's address.
var (
	// ErrNoReflector: nothing answered the handshake.
	ErrNoReflector = errors.New("no reflector answered")
	// ErrSilent: the reflector stopped answering mid-run.
	ErrSilent = errors.New("reflector went silent")
	// ErrGone: the reflector's port became unreachable mid-run, or, with
	// Reconnect, it did not come back in time.
	ErrGone = errors.New("reflector went away")
	// ErrRestarted: the reflector no longer knows the session (it
	// restarted, or idled the session out), and Reconnect is off.
	ErrRestarted = errors.New("the reflector lost the session")
	// ErrAuth: the reflector and the client do not share a key.
	ErrAuth = errors.New("authentication failed")
	// ErrRefused: the reflector refused the session.
	ErrRefused = errors.New("the reflector refused the session")
	// ErrEnded: the reflector ended a session it had opened (it reached
	// the reflector's longest duration).
	ErrEnded = errors.New("the reflector ended the session")
	// ErrNoResults: a one-way run's results did not come back.
	ErrNoResults = errors.New("the reflector's one-way results did not arrive")
	// ErrConfig: the configuration cannot be run.
	ErrConfig = errors.New("bad configuration")
	// ErrStalled: a write to the reflector did not finish in time: a
	// stream reflector stopped reading, and the socket buffers are full.
	ErrStalled = errors.New("the reflector stopped reading")
	// ErrBroken: a stream connection cannot go on, such as one whose
	// reflector sent a frame longer than a stream carries.
	ErrBroken = errors.New("the stream from the reflector broke")
)

// Config says what to measure. Zero fields take the defaults above; Run
// checks the rest, as Check does, and refuses a Config that breaks a rule
// with a *ConfigError.
type Config struct {
	// Duration and Count bound the measured part of the run, after
	// warm-up; whichever is reached first ends it. Both zero means
	// DefaultDuration.
	Duration time.Duration
	Count    uint64
	// WarmupDuration and WarmupCount: probes sent before the measurement,
	// reflected but left out of every result.
	WarmupDuration time.Duration
	WarmupCount    uint64
	// Size is the request size in bytes, header included.
	Size int
	// WireSize is the size of every probe and reply on the wire when a
	// foreign peer's packets are not the client's messages (a plain
	// STAMP packet is 44 bytes, a volley probe at least 64): throughput
	// and the result's size count it. 0: the messages' own sizes.
	WireSize int
	// ReplySize asks the reflector for replies of this size (0: the size
	// of the request), and Hold asks it to wait this long (at most
	// MaxHold) before each reply. The reflector grants them within its
	// limits.
	ReplySize int
	Hold      time.Duration
	// Window is the number of probes in flight (ping-pong: 1). It bounds
	// closed-loop runs only.
	Window int
	// Rate (probes/s) or SendInterval makes the run open-loop: probes
	// leave on schedule whether or not replies came back, and latency is
	// also measured from each probe's scheduled send time.
	Rate         float64
	SendInterval time.Duration
	// Unpaced sends open-loop probes as fast as the client can (--rate
	// max): each leaves as soon as the last went, in batches where the
	// connection moves them, and Rate (MaxRate unless set) only sizes the
	// probe history.
	Unpaced bool
	// Poisson draws the gaps of an open-loop schedule from an exponential
	// distribution with the mean the rate gives, seeded with Seed.
	Poisson bool
	Seed    uint64
	// Burst and Period: a closed-loop run sends Burst probes back to back
	// (each after the last one's reply, Window in flight) at the start of
	// every Period. Period 0 means no pause.
	Burst  int
	Period time.Duration
	// Threshold ends the run at the first RTT above it (0: never).
	Threshold time.Duration
	// ThresholdSkip is how many measured probes, first, the threshold
	// does not judge: a cold path (ARP, caches, a CPU waking) makes the
	// first probes slow without saying anything about the path. They
	// still count in every figure.
	ThresholdSkip uint64
	// Workload mixes probe shapes: each probe's size, reply size and hold
	// come from an entry drawn by weight with Seed; Size, ReplySize and
	// Hold must be left zero. Gaps apply to closed-loop runs.
	Workload []workload.Entry
	// Key, when set, signs every message with an HMAC tag (see package
	// wire) and drops replies without a valid one.
	Key []byte
	// OneWay sends open-loop probes the reflector does not answer: it
	// measures their one-way delay, loss, duplicates and reordering, and
	// hands its results back when the session closes. Without Rate or
	// SendInterval they go at DefaultOneWayRate.
	OneWay bool
	// Timeout is how long a probe waits for its reply before it is lost.
	// In a one-way run over UDP, the reflector waits up to this long after
	// the Close for probes the Close overtook, while any are missing.
	Timeout time.Duration
	// ReportInterval is the length of each interval; negative means none.
	ReportInterval time.Duration
	// Silence is how long a run goes on with no reply before it ends with
	// ErrSilent (default max(3*Timeout, 3s)): from the later of the last
	// reply and the first probe sent after it, to the end of the timeout
	// of a probe lost since, less the client's own stalls.
	Silence time.Duration
	// HandshakeTries is how many Hellos are sent, Timeout apart.
	HandshakeTries int
	// MaxMessage is the largest message the transport carries (default
	// MaxSize, UDP's).
	MaxMessage int
	// NoQuickAck asks a TCP reflector to leave delayed ACKs on (it sets
	// TCP_QUICKACK after reading a held probe or any message but a probe
	// unless the message says not to; see reflector.WantsQuickAck).
	NoQuickAck bool
	// NoPath: the probes do not ask for their path (see wire.FlagPath),
	// nor does the socket read the replies' IP headers.
	NoPath bool
	// Reconnect, when not zero, lets a run whose session is lost (the
	// reflector restarted, went silent or went away) open a new one and
	// carry on, trying for this long, a Hello every Timeout (at most
	// 100ms). Probes in flight then are lost; an open-loop sender keeps to
	// its schedule through the gap, and its probes are lost until the new
	// session opens. Each gap is listed in Result.Reconnects (the latest
	// MaxReconnectsKept). Without it the run ends at the loss.
	Reconnect time.Duration
	// Percentiles to report, 0 to 100.
	Percentiles []float64
	// Histogram adds an RTT histogram with this many bins per decade (0: none).
	Histogram int
	// HistogramWidth, when set, makes the histogram's bins this wide from
	// zero instead (iperf 2's), with an outlier count.
	HistogramWidth time.Duration
	// Clock defaults to the system clock.
	Clock clock.Clock
	// history is the number of probes whose fate is remembered, for tests
	// (default: see historySize).
	history int
	// sleep replaces the open-loop sender's precise sleep, for tests.
	sleep func(time.Duration)
	// Stamps is where the probes' times come from (--timestamps): the
	// zero value, tstamp.Auto, takes the kernel's stamps where the socket
	// has them (UDP on Linux) and the tool's clock readings elsewhere.
	Stamps tstamp.Mode
	// Log, when set, gets a CSV line per measured probe (see LogHeader);
	// each flow writes its own lines, flow numbers from 1.
	Log *LogWriter
	// Samples, when set, keeps the measured probes for a plot (--plot).
	Samples *Samples
	// Observer, when set, hears the figures of every measured probe's
	// first reply as the run records it (see Observer): a monitor's
	// histograms.
	Observer Observer
	// Shared: the run shares its process with many others (volley
	// monitor). An open-loop sender then neither locks an OS thread nor
	// spins before a probe: it sleeps on the runtime's timers, so that a
	// hundred runs take no hundred threads, and a probe may leave up to
	// about a millisecond late (the send error reports it; delays are
	// measured from when it left). Its histograms are stats' coarse ones
	// (percentiles within 1%, a seventh of the memory and of the time to
	// clear and merge each interval's).
	Shared bool
	// Endless: the run goes on until it is stopped, and its summary's
	// latency figures are not wanted (a monitor's continuous
	// measurement, whose intervals are the figures). The intervals are
	// not merged into whole-run histograms, which saves the merge each
	// interval; the summary keeps exact counts and no latency figures.
	Endless bool
	// Thread, when set, is called on each measuring thread as it starts,
	// locked to it: a flow's receiver ("receiver") and, open loop, its
	// sender ("sender"); flows number from 1. A receiver whose call fails
	// ends its flow with the error; a sender's error is the receiver's to
	// report, so Thread should be checked before the run (see package
	// sched).
	Thread func(flow int, role string) error
	// Socket, when set, is copied into the result's configuration: the
	// socket options as the kernel applied them.
	Socket *result.Socket
	// Handler, if set, hears the run's start, intervals, reconnections
	// and end (see Handler).
	Handler Handler
	// StreamIntervals hands the intervals to the Handler only: the
	// result's Intervals stays empty, so that a run of any length holds
	// none of them (a day at 1s intervals would hold 86,400). Writers that
	// print each interval as it ends, JSON included (report.JSONStream),
	// need no more.
	StreamIntervals bool
}

// The command line's bounds: values a library caller may give Run, but
// that a user who typed them would find taken and then failing in a way
// that blames something else. Check applies them to a Config that a
// command line made.
const (
	// MinTimeout: below a millisecond a healthy reply that met a
	// scheduler hiccup would count lost, and the handshake's tries would
	// be over before a reflector on another host could answer.
	MinTimeout = time.Millisecond
	// MaxTimeout: a reflector that died is noticed after 3 timeouts; past
	// a minute the run would sit silent for too long.
	MaxTimeout = time.Minute
	// MinReconnect: at least one Hello (every Timeout, at most 100ms).
	MinReconnect = 100 * time.Millisecond
	// MaxHold: the wire carries a hold in µs in 32 bits (71 minutes);
	// past an hour no reflector grants it (their --max-hold is 1s unless
	// set). It bounds every run's hold.
	MaxHold = time.Hour
)

// DefaultOneWayRate is a one-way run's rate when it is given neither a
// rate nor a send interval.
const DefaultOneWayRate = 1000

// ConfigError is a configuration no run takes: the rule it breaks, said
// in terms of the command line's flag Flag (its name without the dashes)
// and what that flag accepts. It wraps ErrConfig.
type ConfigError struct {
	Flag string
	msg  string
}

// Error says the rule broken, naming the flag.
func (e *ConfigError) Error() string { return e.msg }

// Unwrap returns ErrConfig.
func (e *ConfigError) Unwrap() error { return ErrConfig }

func flagErr(flag, format string, args ...any) error {
	return &ConfigError{Flag: flag, msg: fmt.Sprintf(format, args...)}
}

// Command is what Check knows of the command line a Config came from,
// beyond the Config itself.
type Command struct {
	// Target is where the run goes: the rules of stamps, sizes and
	// reconnecting depend on its transport.
	Target transport.Target
	// Given reports whether the user typed the flag of that name.
	Given func(flag string) bool
}

// Check applies to c, as cmd made it, every rule a run's configuration
// must keep, and returns the first one it breaks as a *ConfigError that
// names the flag. It is what Run checks, with the command line's bounds
// (MinTimeout and the rest) added, and a flag given as 0 refused where
// Config's zero means the default or none (--duration 0, --window 0).
func (c Config) Check(cmd Command) error {
	_, err := c.complete(&cmd)
	return err
}

// withDefaults fills zero fields and checks the rest.
func (c Config) withDefaults() (Config, error) {
	c, err := c.complete(nil)
	if err == nil && c.Clock == nil {
		c.Clock = clock.NewSystem()
	}
	return c, err
}

// complete applies the rules, in the order of the flags', and fills the
// zero fields; cmd is nil for a Config no command line made.
func (c Config) complete(cmd *Command) (Config, error) {
	cl := cmdline{cmd}
	for _, step := range [...]func(*Config, cmdline) error{
		(*Config).checkStamps,
		(*Config).checkDurations,
		(*Config).fillWorkload,
		(*Config).checkSizes,
		(*Config).checkWindow,
		(*Config).checkReconnect,
		(*Config).checkPacing,
		(*Config).checkOneWay,
		(*Config).checkPercentiles,
	} {
		if err := step(&c, cl); err != nil {
			return c, err
		}
	}
	c.fillRest()
	return c, nil
}

// cmdline is the command line a Config came from, as the rules see it; its
// zero value, no command line, is Run's.
type cmdline struct{ cmd *Command }

// given reports whether the user typed the flag.
func (cl cmdline) given(flag string) bool {
	return cl.cmd != nil && cl.cmd.Given != nil && cl.cmd.Given(flag)
}

// set reports whether the field behind flag was set: the flag given, or,
// without a command line, the field not zero.
func (cl cmdline) set(flag string, nonzero bool) bool {
	if cl.cmd != nil {
		return cl.given(flag)
	}
	return nonzero
}

// over names the transport in a size's error.
func (cl cmdline) over() string {
	if cl.cmd == nil {
		return "the connection"
	}
	return strings.ToUpper(cl.cmd.Target.Scheme)
}

// checkStamps: kernel and hardware stamps come per message, only over UDP,
// and time replies, which one-way probes do not get.
func (c *Config) checkStamps(cl cmdline) error {
	if c.Stamps != tstamp.Kernel && c.Stamps != tstamp.Hardware {
		return nil
	}
	// Said before any socket, so that no hint sends the user from one
	// refused mode to another.
	if s := cl.cmd; s != nil && s.Target.Scheme != "udp" {
		return flagErr("timestamps", "--timestamps %s: %s has no stamps per message (only udp:// targets take kernel and hardware stamps); over %s, --timestamps user or auto (the default) times with volley's clock", c.Stamps, s.Target.Scheme, s.Target.Scheme)
	}
	if c.OneWay {
		return flagErr("timestamps", "--timestamps %s does not mix with --oneway: the reflector times one-way probes against the client's clock reading; --timestamps user or auto (the default)", c.Stamps)
	}
	return nil
}

// checkDurations checks the run's length, warm-up, timeout and threshold.
func (c *Config) checkDurations(cl cmdline) error {
	switch {
	case c.Duration < 0 || cl.given("duration") && c.Duration == 0:
		return flagErr("duration", "--duration %s: want a positive duration such as 10s (a bare number is seconds)", units.FormatDuration(c.Duration))
	case c.WarmupDuration < 0:
		return flagErr("warmup", "--warmup %q: want a duration (2s) or a probe count (100)", c.WarmupDuration.String())
	case c.Timeout < 0 || cl.cmd != nil && (c.Timeout < MinTimeout || c.Timeout > MaxTimeout):
		return flagErr("timeout", "--timeout %s: want %s to %s", units.FormatDuration(c.Timeout), units.FormatDuration(MinTimeout), units.FormatDuration(MaxTimeout))
	case c.Threshold < 0 || cl.given("threshold") && c.Threshold == 0:
		return flagErr("threshold", "--threshold %s: want a positive duration", c.Threshold)
	}
	if c.Duration == 0 && c.Count == 0 {
		c.Duration = DefaultDuration
	}
	return nil
}

// fillWorkload checks a workload and sizes the buffers and the handshake
// for its largest entry.
func (c *Config) fillWorkload(cl cmdline) error {
	if len(c.Workload) == 0 {
		return nil
	}
	if cl.set("size", c.Size != 0) || cl.set("reply-size", c.ReplySize != 0) || cl.set("hold", c.Hold != 0) || c.OneWay {
		return flagErr("workload", "--workload sets sizes and holds itself: it does not mix with --size, --reply-size, --hold or --oneway")
	}
	if len(c.Workload) > 1<<16 {
		return flagErr("workload", "--workload: more than %d entries", 1<<16)
	}
	for _, e := range c.Workload {
		// Sizes of the buffers and of the handshake: the largest.
		c.Size = max(c.Size, e.Size)
		c.ReplySize = max(c.ReplySize, e.ReplySize)
		c.Hold = max(c.Hold, time.Duration(e.Hold))
		if e.Gap > 0 && c.openLoop() {
			return flagErr("workload", "--workload: gaps are for closed-loop runs; --rate and --send-interval set their own")
		}
	}
	return nil
}

// checkSizes checks the request's and the reply's sizes and the hold,
// and fills the size: the header's, and the tag's with a key.
func (c *Config) checkSizes(cl cmdline) error {
	if c.Size == 0 {
		c.Size = DefaultSize
	}
	minSize := MinSize
	if len(c.Key) > 0 {
		minSize += wire.TagLen
		if c.Size == DefaultSize && !cl.given("size") {
			c.Size = minSize
		}
	}
	if c.MaxMessage == 0 {
		c.MaxMessage = MaxSize
	}
	switch {
	case c.Size < MinSize:
		return flagErr("size", "--size %s is smaller than the header: the minimum is %d bytes", units.FormatBytes(int64(c.Size)), MinSize)
	case c.Size > c.MaxMessage:
		return flagErr("size", "--size %s is too large: the maximum over %s is %s", units.FormatBytes(int64(c.Size)), cl.over(), bytesWord(c.MaxMessage))
	case c.Size < minSize:
		return flagErr("size", "--size %s is smaller than the header and authentication tag: the minimum is %d bytes", units.FormatBytes(int64(c.Size)), minSize)
	case cl.set("reply-size", c.ReplySize != 0) && (c.ReplySize < MinSize || c.ReplySize > c.MaxMessage):
		return flagErr("reply-size", "--reply-size %s: want %d to %s over %s, header included", units.FormatBytes(int64(c.ReplySize)), MinSize, bytesWord(c.MaxMessage), cl.over())
	case c.Hold < 0 || c.Hold > MaxHold || cl.given("hold") && c.Hold < time.Microsecond:
		return flagErr("hold", "--hold %s: want 1µs to %s (the reflector grants at most its --max-hold, 1s unless set)", units.FormatDuration(c.Hold), units.FormatDuration(MaxHold))
	}
	for _, e := range c.Workload {
		if e.Size < minSize || (e.ReplySize != 0 && e.ReplySize < minSize) {
			return flagErr("workload", "--workload: entry %s is smaller than %d bytes (header%s included)", e.Name, minSize, tagWord(c.Key))
		}
	}
	return nil
}

// checkWindow checks the probes in flight; 0 is 1.
func (c *Config) checkWindow(cl cmdline) error {
	if c.Window < 0 || c.Window > MaxWindow || cl.given("window") && c.Window == 0 {
		return flagErr("window", "--window %d: want 1 to %d", c.Window, MaxWindow)
	}
	if c.Window == 0 {
		c.Window = 1
	}
	return nil
}

// checkReconnect: a new session carries on after at least one Hello, over
// datagrams, for round trips.
func (c *Config) checkReconnect(cl cmdline) error {
	switch {
	case c.Reconnect < 0 || cl.given("reconnect") && c.Reconnect < MinReconnect:
		return flagErr("reconnect", "--reconnect=%s: want at least %s (a Hello goes every --timeout, at most 100ms)", units.FormatDuration(c.Reconnect), units.FormatDuration(MinReconnect))
	case c.Reconnect > 0 && cl.cmd != nil && cl.cmd.Target.Stream():
		return flagErr("reconnect", "--reconnect is for udp:// and unixgram:// targets: a %s connection that broke is not reopened", cl.cmd.Target.Scheme)
	case c.Reconnect > 0 && c.OneWay:
		return flagErr("reconnect", "--reconnect does not mix with --oneway: a one-way run's results live in the reflector's session, and a restart loses them")
	}
	return nil
}

// checkPacing checks the open loop's rate or send interval, its Poisson
// gaps, and the closed loop's bursts.
func (c *Config) checkPacing(cl cmdline) error {
	if c.Unpaced && c.Rate == 0 {
		c.Rate = MaxRate // sizes the probe history; nothing is paced
	}
	switch {
	case c.Unpaced && c.Poisson:
		return flagErr("rate", "--rate max has no schedule to draw Poisson gaps for")
	case c.Rate < 0 || c.Rate > MaxRate || cl.given("rate") && !c.Unpaced && c.Rate == 0:
		return flagErr("rate", "--rate %s: want more than 0 and at most %s probes/s, or max", units.FormatRate(c.Rate), units.FormatRate(MaxRate))
	case c.SendInterval < 0 || cl.given("send-interval") && c.SendInterval < time.Microsecond:
		return flagErr("send-interval", "--send-interval %s: want at least 1µs", c.SendInterval)
	case c.Rate > 0 && c.SendInterval > 0:
		return flagErr("rate", "--rate and --send-interval both given: want one of them")
	case c.Poisson && !c.openLoop():
		return flagErr("poisson", "--poisson needs --rate or --send-interval")
	case cl.given("seed") && !c.Poisson && len(c.Workload) == 0:
		return flagErr("seed", "--seed is for --poisson and --workload")
	case c.Burst < 0 || cl.given("burst") && c.Burst == 0:
		return flagErr("burst", "--burst %d: want at least 1", c.Burst)
	case c.Burst > 0 && c.openLoop():
		return flagErr("burst", "--burst is closed-loop: it does not mix with --rate or --send-interval")
	case cl.set("period", c.Period > 0) && c.Burst == 0:
		return flagErr("period", "--period needs --burst")
	case c.Period < 0:
		return flagErr("period", "--period %s: want a duration, or 0 for no pause", c.Period)
	}
	return nil
}

// checkOneWay: one-way probes get no replies, and go at a rate
// (DefaultOneWayRate unless given one).
func (c *Config) checkOneWay(cl cmdline) error {
	if !c.OneWay {
		return nil
	}
	if c.Burst > 0 || cl.set("reply-size", c.ReplySize != 0) || cl.set("hold", c.Hold != 0) || cl.set("threshold", c.Threshold != 0) || cl.given("window") {
		return flagErr("oneway", "--oneway gets no replies: it does not mix with --burst, --reply-size, --hold, --threshold or --window")
	}
	if !c.openLoop() {
		c.Rate = DefaultOneWayRate
	}
	return nil
}

// checkPercentiles checks the percentiles (see ParsePercentiles).
func (c *Config) checkPercentiles(cmdline) error {
	for _, p := range c.Percentiles {
		if !percentileOK(p) {
			return flagErr("percentiles", "--percentiles: %v is out of range (want numbers from 0 to 100)", p)
		}
	}
	return nil
}

func percentileOK(p float64) bool { return p >= 0 && p <= 100 }

// ParsePercentiles reads --percentiles: numbers from 0 to 100,
// comma-separated.
func ParsePercentiles(s string) ([]float64, error) {
	var out []float64
	for _, field := range strings.Split(s, ",") {
		p, err := strconv.ParseFloat(strings.TrimSpace(field), 64)
		if err != nil || !percentileOK(p) {
			return nil, flagErr("percentiles", "--percentiles %q: bad value %q (want numbers from 0 to 100, comma-separated)", s, field)
		}
		out = append(out, p)
	}
	return out, nil
}

// fillRest fills the zero fields no rule is about.
func (c *Config) fillRest() {
	if c.Timeout == 0 {
		c.Timeout = DefaultTimeout
	}
	if c.ReportInterval == 0 {
		c.ReportInterval = DefaultReportInterval
	}
	if c.Silence == 0 {
		c.Silence = max(3*c.Timeout, 3*time.Second)
	}
	if c.HandshakeTries <= 0 {
		c.HandshakeTries = DefaultHandshakeTries
	}
	if c.Percentiles == nil {
		c.Percentiles = DefaultPercentiles
	}
}

// bytesWord writes n bytes for an error: "65000 bytes", or "4194304 bytes
// (4M)" where the short form says it otherwise.
func bytesWord(n int) string {
	if short := units.FormatBytes(int64(n)); short != strconv.Itoa(n) {
		return fmt.Sprintf("%d bytes (%s)", n, short)
	}
	return fmt.Sprintf("%d bytes", n)
}
