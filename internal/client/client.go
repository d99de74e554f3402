// Package client runs volley measurements: it opens a session with a
// reflector, sends probes, matches replies, declares losses after a
// timeout, and returns a result.Result, partial when the run ends early.
//
// The per-probe path records into histograms and counters only: it
// allocates nothing, logs nothing, and keeps no per-probe sample.
package client

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"runtime"
	"sync/atomic"
	"time"

	"github.com/volley-net/volley/internal/clock"
	"github.com/volley-net/volley/internal/result"
	"github.com/volley-net/volley/internal/transport"
	"github.com/volley-net/volley/internal/tstamp"
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
)

func tagWord(key []byte) string {
	if len(key) > 0 {
		return " and authentication tag"
	}
	return ""
}

// MaxRate is the highest open-loop rate: one probe a microsecond.
const MaxRate = 1_000_000

// openLoop reports whether the run sends on a schedule.
func (c Config) openLoop() bool { return c.Rate > 0 || c.SendInterval > 0 }

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

// Config says what to measure. Zero fields take the defaults above.
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
	// ReplySize asks the reflector for replies of this size (0: the size
	// of the request), and Hold asks it to wait this long before each
	// reply. The reflector grants them within its limits.
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
	// Unpaced, with Rate, sends open-loop probes as fast as the client can
	// (--rate max): each leaves as soon as the last went, in batches where
	// the connection moves them, and Rate only sizes the probe history.
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
	// hands its results back when the session closes.
	OneWay bool
	// Timeout is how long a probe waits for its reply before it is lost.
	// In a one-way run over UDP, the reflector waits up to this long after
	// the Close for probes the Close overtook, while any are missing.
	Timeout time.Duration
	// ReportInterval is the length of each interval; negative means none.
	ReportInterval time.Duration
	// Silence is how long a run goes on with no reply at all before it
	// ends with ErrSilent (default max(3*Timeout, 3s)).
	Silence time.Duration
	// HandshakeTries is how many Hellos are sent, Timeout apart.
	HandshakeTries int
	// MaxMessage is the largest message the transport carries (default
	// MaxSize, UDP's).
	MaxMessage int
	// NoQuickAck asks a TCP reflector to leave delayed ACKs on (it sets
	// TCP_QUICKACK after every read unless a message says not to).
	NoQuickAck bool
	// Reconnect, when not zero, lets a run whose session is lost (the
	// reflector restarted, went silent or went away) open a new one and
	// carry on, trying for this long, a Hello every Timeout (at most
	// 100ms). Probes in flight then are lost; an open-loop sender keeps to
	// its schedule through the gap, and its probes are lost until the new
	// session opens. Each gap is listed in Result.Reconnects. Without it
	// the run ends at the loss.
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

// withDefaults fills zero fields and checks the rest.
func (c Config) withDefaults() (Config, error) {
	if c.Duration < 0 || c.WarmupDuration < 0 || c.Timeout < 0 {
		return c, fmt.Errorf("%w: negative duration", ErrConfig)
	}
	if c.Duration == 0 && c.Count == 0 {
		c.Duration = DefaultDuration
	}
	if len(c.Workload) > 0 {
		if c.Size != 0 || c.ReplySize != 0 || c.Hold != 0 || c.OneWay {
			return c, fmt.Errorf("%w: a workload sets sizes and holds itself, and gets replies", ErrConfig)
		}
		if len(c.Workload) > 1<<16 {
			return c, fmt.Errorf("%w: more than %d workload entries", ErrConfig, 1<<16)
		}
		for _, e := range c.Workload {
			// Sizes of the buffers and of the handshake: the largest.
			c.Size = max(c.Size, e.Size)
			c.ReplySize = max(c.ReplySize, e.ReplySize)
			c.Hold = max(c.Hold, time.Duration(e.Hold))
			if e.Gap > 0 && c.openLoop() {
				return c, fmt.Errorf("%w: workload gaps are for closed-loop runs; a rate sets its own", ErrConfig)
			}
		}
	}
	if c.Size == 0 {
		c.Size = DefaultSize
	}
	minSize := wire.HeaderLen
	if len(c.Key) > 0 {
		minSize += wire.TagLen
		if c.Size == DefaultSize {
			c.Size = minSize
		}
	}
	if c.MaxMessage == 0 {
		c.MaxMessage = MaxSize
	}
	if c.Size < minSize || c.Size > c.MaxMessage {
		return c, fmt.Errorf("%w: size %d out of range (want %d to %d bytes, header%s included)", ErrConfig, c.Size, minSize, c.MaxMessage, tagWord(c.Key))
	}
	for _, e := range c.Workload {
		if e.Size < minSize || (e.ReplySize != 0 && e.ReplySize < minSize) {
			return c, fmt.Errorf("%w: workload entry %s smaller than %d bytes (header%s included)", ErrConfig, e.Name, minSize, tagWord(c.Key))
		}
	}
	if c.ReplySize != 0 && (c.ReplySize < wire.HeaderLen || c.ReplySize > c.MaxMessage) {
		return c, fmt.Errorf("%w: reply size %d out of range (want %d to %d bytes, header included)", ErrConfig, c.ReplySize, wire.HeaderLen, c.MaxMessage)
	}
	if c.Hold < 0 || c.Hold > time.Duration(math.MaxUint32)*time.Microsecond {
		return c, fmt.Errorf("%w: hold %s out of range", ErrConfig, c.Hold)
	}
	if c.Window == 0 {
		c.Window = 1
	}
	if c.Window < 1 || c.Window > MaxWindow {
		return c, fmt.Errorf("%w: window %d out of range (want 1 to %d)", ErrConfig, c.Window, MaxWindow)
	}
	switch {
	case c.Rate < 0 || c.SendInterval < 0 || c.Period < 0 || c.Burst < 0 || c.Threshold < 0:
		return c, fmt.Errorf("%w: negative rate, interval, burst, period or threshold", ErrConfig)
	case c.Rate > 0 && c.SendInterval > 0:
		return c, fmt.Errorf("%w: give a rate or a send interval, not both", ErrConfig)
	case c.Rate > MaxRate:
		return c, fmt.Errorf("%w: rate %v above the most a schedule can pace (%d probes/s)", ErrConfig, c.Rate, MaxRate)
	case c.Poisson && !c.openLoop():
		return c, fmt.Errorf("%w: Poisson gaps need a rate or a send interval", ErrConfig)
	case c.Burst > 0 && c.openLoop():
		return c, fmt.Errorf("%w: bursts are closed-loop; they do not mix with a rate", ErrConfig)
	case c.Period > 0 && c.Burst == 0:
		return c, fmt.Errorf("%w: a period needs a burst size", ErrConfig)
	case c.OneWay && !c.openLoop():
		return c, fmt.Errorf("%w: one-way probes need a rate or a send interval", ErrConfig)
	case c.Reconnect < 0:
		return c, fmt.Errorf("%w: negative reconnect time", ErrConfig)
	case c.OneWay && c.Reconnect > 0:
		return c, fmt.Errorf("%w: one-way results live in the reflector's session, and a restart loses them; --reconnect is for round trips", ErrConfig)
	case c.OneWay && (c.ReplySize != 0 || c.Hold != 0 || c.Threshold != 0):
		return c, fmt.Errorf("%w: one-way probes get no reply, so no reply size, hold or RTT threshold", ErrConfig)
	}
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
	for _, p := range c.Percentiles {
		if p < 0 || p > 100 {
			return c, fmt.Errorf("%w: percentile %v out of range (want 0 to 100)", ErrConfig, p)
		}
	}
	if c.Clock == nil {
		c.Clock = clock.NewSystem()
	}
	return c, nil
}

// historySize is the number of probes whose fate the client remembers, a
// power of two: enough to tell late replies and duplicates apart for a
// timeout's worth of probes at high rates. A probe still unanswered when
// that many newer probes have been sent is declared lost at once.
func historySize(cfg Config) int {
	n := cfg.history
	if n == 0 {
		n = max(4*cfg.Window, 1<<17)
		if cfg.openLoop() {
			// A known rate: two timeouts' worth of probes is enough, and
			// keeps a slow flow small (many of them run with -P).
			rate := cfg.Rate
			if cfg.SendInterval > 0 {
				rate = 1e9 / float64(cfg.SendInterval)
			}
			n = min(n, max(4*cfg.Window, 1<<12, int(2*rate*cfg.Timeout.Seconds())))
		}
	}
	return 1 << bits.Len64(uint64(n)-1)
}

// run is the state of one Run. One goroutine owns it, but for the parts
// an open-loop sender shares (openLoop, writeEndBy).
//
// The loop (loop.go) is composed of parts, each in its file: the session
// with the reflector (session.go), the recorder that does all the
// accounting (record.go), and what the run was asked for: a closed-loop
// sender with its bursts and workload gaps (closedloop.go) or an open-loop
// one (openloop.go), kernel stamps (stamps.go, in the recorder), and
// reconnection (reconnect.go).
type run struct {
	recorder // the accounting: probes, intervals, segments, results

	cfg   Config
	conn  transport.Conn
	clk   clock.Clock
	peer  string
	flow  int                 // from 1
	buf   []byte              // send buffer
	rbuf  []byte              // receive buffer of the handshake and the close
	in    []transport.Message // receive buffers of the run, made by read
	batch transport.BatchConn // nil: reads one message at a time

	// The session (session.go).
	token     uint64
	nonce     uint64       // the Hello's; probes and the close carry it
	signer    *wire.Signer // nil without a key
	grant     result.Grant
	opened    int64 // when the session (the last one) opened
	lastHeard int64
	sameClock bool                // every session's reflector reads the client's clock
	oneway    *wire.OneWayResults // a one-way run's, from the CloseAck

	// Sending, and the wind-down: once sending stops, the run waits for
	// the probes in flight until drainBy, and closes the session by endBy
	// at the latest.
	sending        bool
	sendEnd        int64 // when sending stopped: the summary's rates are over [origin, sendEnd]
	drainBy, endBy int64

	// The parts.
	closedLoop closedLoop // the closed-loop sender's pacing; unused open loop
	openLoop   *openLoop  // nil: closed loop
	recon      *reconnect // nil unless looking for a new session
	stampNotes []string   // why the run fell back to user-space times

	// Writes: see write.go.
	guard      *writeGuard  // the receiver's
	writeEndBy atomic.Int64 // no probe is written after this (0: not known yet)
	stream     bool         // a TCP or Unix stream: an error on it is the end of it
	broken     bool         // a write was cut, or a read failed: nothing more goes over the connection
}

// ThresholdColdProbes is the command line's ThresholdSkip for a run
// without warm-up: on loopback the first probe took 140 to 330µs and the
// next ones 20 to 90µs.
const ThresholdColdProbes = 10

// Run measures through conn until the configured duration or count is
// reached, ctx is done, or the reflector stops answering. It returns the
// result so far together with any error; the result is nil only when no
// session could be opened.
func Run(ctx context.Context, cfg Config, conn transport.Conn) (*result.Result, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	r := newRun(cfg, conn)
	r.flow = 1
	if cfg.Log != nil {
		r.log = newProbeLog(cfg.Log, 1)
	}
	stop := context.AfterFunc(ctx, r.interrupt)
	defer stop()
	if err := r.start(ctx); err != nil {
		return nil, err
	}
	r.handler.Start(r.res)
	err = r.execute(ctx)
	r.handler.End(r.res)
	return r.res, err
}

// newRun prepares a run of cfg (defaults filled in) through conn.
func newRun(cfg Config, conn transport.Conn) *run {
	network := conn.RemoteAddr().Network()
	r := &run{
		cfg:    cfg,
		conn:   conn,
		clk:    cfg.Clock,
		peer:   network + "://" + conn.RemoteAddr().String(),
		buf:    make([]byte, cfg.Size),
		rbuf:   make([]byte, cfg.MaxMessage+1),
		stream: network == "tcp" || network == "unix",
	}
	r.recorder.init(&r.cfg)
	if cfg.openLoop() {
		r.openLoop = newOpenLoop()
	} else if len(cfg.Workload) > 0 {
		r.closedLoop.picker = workload.NewPicker(cfg.Workload, cfg.Seed)
	}
	r.guard = newWriteGuard(r)
	if len(cfg.Key) > 0 {
		r.signer = wire.NewSigner(cfg.Key)
	}
	return r
}

// execute measures, closes the session and fills in the result.
func (r *run) execute(ctx context.Context) error {
	if r.cfg.Thread != nil {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if err := r.cfg.Thread(r.flow, "receiver"); err != nil {
			// Nothing was measured: end the session and say why.
			r.res.Stopped, r.res.Error = "error", err.Error()
			r.close()
			return err
		}
	}
	err := r.loop(ctx)
	if r.openLoop != nil {
		err = r.endSender(err)
	}
	if r.broken || errors.Is(err, ErrSilent) || errors.Is(err, ErrGone) || errors.Is(err, ErrRestarted) {
		r.res.ReflectorCount = "last-reply"
	} else {
		r.close()
	}
	if ferr := r.finish(); err == nil {
		err = ferr
	}
	if err != nil {
		r.res.Error = err.Error()
	}
	return err
}
