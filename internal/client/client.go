// Package client runs volley measurements: it opens a session with a
// reflector, sends probes, matches replies, declares losses after a
// timeout, and returns a result.Result, partial when the run ends early.
//
// The per-probe path records into histograms and counters only: it
// allocates nothing, logs nothing, and keeps no per-probe sample.
package client

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"net"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/volley-net/volley/internal/clock"
	"github.com/volley-net/volley/internal/result"
	"github.com/volley-net/volley/internal/stats"
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

// Probe states in the history ring.
const (
	stateFree uint8 = iota
	stateOutstanding
	stateReceived
	stateLost
	stateLate // lost, then its reply came
)

type slot struct {
	seq   uint64
	sent  int64
	sched int64  // scheduled send time (open loop), 0 otherwise
	iv    uint32 // the interval it was sent in (measured probes)
	entry uint16 // workload entry
	state uint8
	// t3 holds the reflector's send times in its first reply and in the
	// last reply to another copy of it. The reflector stamps each reply
	// it sends: a duplicate with either T3 is a copy made on the way
	// down, one with a T3 of its own the answer to a copy of the probe
	// that reached the reflector again.
	t3 [2]int64
	k  kernelSlot // kernel stamps (Config.Stamps)
}

// The distributions each interval keeps, in this order.
const (
	distRTT = iota
	distResponse
	distUp
	distDown
	distIPDVRTT
	distIPDVUp
	distIPDVDown
	distRTTSched  // RTT from the scheduled send time (open loop)
	distSendError // actual minus scheduled send time (open loop)
	numDists
)

// acc accumulates one interval.
type acc struct {
	start     int64
	counts    result.Counts
	bytesUp   uint64
	bytesDown uint64
	d         [numDists]*stats.Dist
	k         [numKDists]*stats.Dist // kernel stamps' figures; nil without them
}

// kernel returns a's kernel distributions, made on first use.
func (a *acc) kernel() *[numKDists]*stats.Dist {
	if a.k[0] == nil {
		for i := range a.k {
			a.k[i] = stats.NewDist()
		}
	}
	return &a.k
}

func newAcc() *acc {
	a := &acc{}
	for i := range a.d {
		a.d[i] = stats.NewDist()
	}
	return a
}

func (a *acc) merge(o *acc) {
	a.counts.Add(o.counts)
	a.bytesUp += o.bytesUp
	a.bytesDown += o.bytesDown
	for i := range a.d {
		a.d[i].Merge(o.d[i])
	}
	if o.k[0] != nil {
		k := a.kernel()
		for i := range k {
			k[i].Merge(o.k[i])
		}
	}
}

func (a *acc) reset(start int64) {
	a.start = start
	a.counts = result.Counts{}
	a.bytesUp, a.bytesDown = 0, 0
	for _, d := range a.d {
		d.Reset()
	}
	if a.k[0] != nil {
		for _, d := range a.k {
			d.Reset()
		}
	}
}

// interval renders a as a result interval ending at end; origin is the
// start of measurement.
func (a *acc) interval(origin, end int64, pct []float64) result.Interval {
	iv := result.Interval{
		Start:    time.Duration(a.start - origin),
		End:      time.Duration(end - origin),
		Counts:   a.counts,
		RTT:      a.d[distRTT].Summary(pct),
		Response: a.d[distResponse].Summary(pct),
		Up:       a.d[distUp].Summary(pct),
		Down:     a.d[distDown].Summary(pct),
		IPDV: result.IPDV{
			RTT:  a.d[distIPDVRTT].Summary(pct),
			Up:   a.d[distIPDVUp].Summary(pct),
			Down: a.d[distIPDVDown].Summary(pct),
		},
	}
	if a.d[distSendError].Count() > 0 || a.d[distRTTSched].Count() > 0 {
		rs, se := a.d[distRTTSched].Summary(pct), a.d[distSendError].Summary(pct)
		iv.RTTFromSchedule, iv.SendError = &rs, &se
	}
	if a.k[0] != nil {
		iv.Kernel = a.kernelSummary(pct)
	}
	if iv.Counts.Sent > 0 {
		iv.Counts.LossPercent = 100 * float64(iv.Counts.Lost) / float64(iv.Counts.Sent)
	}
	iv.Throughput.BytesUp, iv.Throughput.BytesDown = a.bytesUp, a.bytesDown
	if secs := time.Duration(end - a.start).Seconds(); secs > 0 {
		t := &iv.Throughput
		t.ProbesPerSecUp = float64(a.counts.Sent) / secs
		t.ProbesPerSecDown = float64(a.counts.Received) / secs
		t.BitsPerSecUp = float64(a.bytesUp*8) / secs
		t.BitsPerSecDown = float64(a.bytesDown*8) / secs
		t.RequestsPerSec = float64(a.counts.Received) / secs
	}
	return iv
}

// run is the state of one Run. One goroutine owns it.
type run struct {
	cfg   Config
	conn  transport.Conn
	clk   clock.Clock
	peer  string
	token uint64
	nonce uint64              // the Hello's; probes and the close carry it
	buf   []byte              // send buffer
	rbuf  []byte              // receive buffer of the handshake and the close
	in    []transport.Message // receive buffers of the run, made by read
	batch transport.BatchConn // nil: reads one message at a time

	ring []slot
	mask uint64

	seq        uint64 // last sequence number sent
	warmupLast uint64 // last warm-up sequence number (0: none yet)
	warm       bool   // still warming up
	origin     int64  // end of warm-up: time zero of the results
	opened     int64  // when the session (the last one) opened
	sendUntil  int64  // stop sending at this time (0: no limit yet)
	sendEnd    int64  // when sending stopped: the summary's rates are over [origin, sendEnd]
	sending    bool
	// The wind-down: once sending stops, the run waits for the probes in
	// flight until drainBy, and closes the session by endBy at the latest.
	drainBy, endBy int64
	inflight       int
	oldest         uint64 // lowest sequence number that may be outstanding
	lastHeard      int64
	// lastLostSent is when the latest probe declared lost was sent.
	lastLostSent int64
	highestRecv  uint64
	maxT3        int64    // the latest reflector send time of a reply received, for reordering down
	prev         struct { // the last probe received, for IPDV
		seq           uint64
		rtt, up, down int64
	}
	log        *probeLog         // nil without --log
	stamps     *stamping         // nil without kernel stamps
	stampNotes []string          // why the run fell back to user-space times
	flow       int               // from 1
	tcp        transport.TCPConn // nil unless over TCP
	tcpRetrans uint32            // the connection's retransmits at the last interval's end
	segs       []segment         // the sessions of the run; see reconnect.go
	offset     offsetEst         // the smallest delays of each window, for the clock offset
	sameClock  bool              // every session's reflector reads the client's clock
	intervals  int               // intervals ended so far
	recon      *reconnect        // looking for a new session
	reportedU  uint64            // loss on the way up in the intervals reported
	lostN      uint64            // measured probes declared lost
	finalCount uint64            // the reflector's count from its CloseAck
	oneway     *wire.OneWayResults

	// The intervals pending (see intervals.go), oldest first: the last
	// is the current one, whose accumulator is cur. total gathers the
	// reported ones, for the summary.
	ivs        []*pending
	freeIvs    []*pending
	ivNext     uint32
	pendLimit  int
	cur, total *acc
	res        *result.Result

	// Writes: see write.go.
	wg         *writeGuard  // the receiver's
	writeEndBy atomic.Int64 // no probe is written after this (0: not known yet)
	stream     bool         // a TCP or Unix stream: an error on it is the end of it
	broken     bool         // a write was cut, or a read failed: nothing more goes over the connection
	senderErr  error        // the open-loop sender's write that stalled; read after senderDone

	nextReport int64 // end of the current interval (0: none)
	grant      result.Grant
	// collect, in a parallel run, takes each interval (its index, its
	// accumulator, its span) before the accumulator is reset.
	collect func(k int, a *acc, start, end time.Duration)
	handler Handler // never nil
	// Workload mixes: the picker (closed loop; the sender has its own),
	// the per-entry results, and when the next probe may leave (gaps).
	picker     *workload.Picker
	entries    []*entryAcc
	nextSendAt int64
	signer     *wire.Signer // nil without a key

	// Closed-loop bursts.
	burstSent int
	periodEnd int64

	// Open loop: see openloop.go.
	open       bool
	sent       *sentQueue
	senderDone atomic.Bool // set by the sender as it returns
	senderStop string      // why the sender stopped; read after senderDone
	senderEnd  int64       // when the sender stopped; read after senderDone
	stopSender atomic.Bool // set by the receiver
	senderGone atomic.Bool // the sender saw the port unreachable
	sendErrors atomic.Uint64
	senderWG   sync.WaitGroup
	session    atomic.Pointer[sessionKey] // the sender's session
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
	ringSize := uint64(historySize(cfg))
	r := &run{
		cfg:   cfg,
		conn:  conn,
		clk:   cfg.Clock,
		peer:  conn.RemoteAddr().Network() + "://" + conn.RemoteAddr().String(),
		buf:   make([]byte, cfg.Size),
		rbuf:  make([]byte, cfg.MaxMessage+1),
		ring:  make([]slot, ringSize),
		mask:  ringSize - 1,
		total: newAcc(),
		open:  cfg.openLoop(),
	}
	r.handler = handlerOf(&r.cfg)
	r.pendLimit = pendingLimit(&r.cfg)
	r.openInterval(0)
	if r.open {
		r.sent = newSentQueue(1 << 16)
	}
	network := conn.RemoteAddr().Network()
	r.stream = network == "tcp" || network == "unix"
	r.wg = newWriteGuard(r)
	if len(cfg.Key) > 0 {
		r.signer = wire.NewSigner(cfg.Key)
	}
	if len(cfg.Workload) > 0 {
		r.entries = make([]*entryAcc, len(cfg.Workload))
		for i := range r.entries {
			r.entries[i] = &entryAcc{rtt: stats.NewDist(), response: stats.NewDist()}
		}
		if !r.open {
			r.picker = workload.NewPicker(cfg.Workload, cfg.Seed)
		}
	}
	return r
}

// start opens the session and the result.
func (r *run) start(ctx context.Context) error {
	// Before the handshake: a kernel that starts stamping takes a moment.
	stampsUsed, err := r.setupStamps()
	if err != nil {
		return err
	}
	if err := r.handshake(ctx); err != nil {
		return err
	}
	cfg := &r.cfg
	r.res = &result.Result{
		SchemaVersion: result.SchemaVersion,
		Tool:          "volley",
		Config: result.Config{
			Transport:      r.conn.RemoteAddr().Network(),
			LocalAddr:      r.conn.LocalAddr().String(),
			RemoteAddr:     r.conn.RemoteAddr().String(),
			Duration:       cfg.Duration,
			Count:          cfg.Count,
			WarmupDuration: cfg.WarmupDuration,
			WarmupCount:    cfg.WarmupCount,
			Size:           cfg.Size,
			Window:         cfg.Window,
			Timeout:        cfg.Timeout,
			ReportInterval: max(cfg.ReportInterval, 0),
			Percentiles:    cfg.Percentiles,
			Timestamps:     stampsUsed,
			Rate:           cfg.Rate,
			RateMax:        cfg.Unpaced,
			SendInterval:   cfg.SendInterval,
			Poisson:        cfg.Poisson,
			Burst:          cfg.Burst,
			ReplySize:      cfg.ReplySize,
			Hold:           cfg.Hold,
			Granted:        r.grant,
			OneWay:         cfg.OneWay,
			Period:         cfg.Period,
			Threshold:      cfg.Threshold,
			ThresholdSkip:  cfg.ThresholdSkip,
			Parallel:       1,
			Socket:         cfg.Socket,
		},
		Start:     cfg.Clock.Time(r.clk.Now()),
		Intervals: []result.Interval{},
	}
	if cfg.Poisson || len(cfg.Workload) > 0 {
		r.res.Config.Seed = cfg.Seed
	}
	if tc, ok := r.conn.(transport.TCPConn); ok {
		if ti, err := tc.TCPInfo(); err == nil {
			r.tcp, r.tcpRetrans = tc, ti.TotalRetrans
			r.res.Config.TCP = &result.TCPConnect{ConnectTime: tc.ConnectTime(), Cwnd: ti.Cwnd, MSS: ti.MSS, RTT: ti.RTT}
		}
	}
	return nil
}

// tcpInterval reads TCP_INFO for the interval that ends now: the
// retransmits since the last one, and the window and RTT now. since0 takes
// them since the connection opened instead.
func (r *run) tcpInterval(since0 bool) *result.TCPInterval {
	ti, err := r.tcp.TCPInfo()
	if err != nil {
		return nil
	}
	iv := &result.TCPInterval{Retransmits: uint64(ti.TotalRetrans - r.tcpRetrans), Cwnd: ti.Cwnd, RTT: ti.RTT, RTTVar: ti.RTTVar}
	if since0 {
		iv.Retransmits = uint64(ti.TotalRetrans)
	} else {
		r.tcpRetrans = ti.TotalRetrans
	}
	return iv
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
	if r.open {
		// The sender is done, or must be now; take in its last probes.
		r.stopSender.Store(true)
		if err != nil {
			// The run is over: a write the sender is blocked in (the
			// reflector stopped reading) must not hold it.
			r.endWrites(r.clk.Now())
		}
		r.senderWG.Wait()
		r.drain()
		if r.senderErr != nil {
			// Its write was cut: part of a message may have gone.
			r.broken = true
			if err == nil {
				err = r.senderErr
			}
		}
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

// handshake sends Hellos until a Cookie answers, and keeps its token.
func (r *run) handshake(ctx context.Context) error {
	var nb [8]byte
	if _, err := rand.Read(nb[:]); err != nil {
		return fmt.Errorf("make handshake nonce: %w", err)
	}
	nonce := binary.BigEndian.Uint64(nb[:])
	r.nonce = nonce
	hello := r.hello(nonce)
	badTags := 0
	for try := 1; try <= r.cfg.HandshakeTries; try++ {
		hello.T1 = r.clk.Now()
		msg := r.helloMsg()
		r.encode(&hello, msg)
		if err := r.wg.within(hello.T1, r.cfg.Timeout, true); err != nil {
			return err
		}
		if _, err := r.conn.Write(msg); err != nil {
			return r.noReflector(err)
		}
		deadline := hello.T1 + int64(r.cfg.Timeout)
		if err := r.conn.SetReadDeadline(r.clk.Time(deadline)); err != nil {
			return fmt.Errorf("set read deadline: %w", err)
		}
		for {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			n, err := r.conn.Read(r.rbuf)
			if err != nil {
				if errors.Is(err, os.ErrDeadlineExceeded) {
					break
				}
				return r.noReflector(err)
			}
			var h wire.Header
			if h.Decode(r.rbuf[:n]) != nil || h.Seq != nonce {
				continue
			}
			if h.Type == wire.TypeError {
				// Unsigned by design: a client without the key must be
				// able to read why it was refused.
				code := h.Code
				if code == wire.ErrorNoKey {
					return r.noKey()
				}
				if code == wire.ErrorAuth {
					if r.signer == nil {
						return fmt.Errorf("%w at %s: the reflector requires a key (--key)", ErrAuth, r.peer)
					}
					return fmt.Errorf("%w at %s: the reflector has a different key", ErrAuth, r.peer)
				}
				return fmt.Errorf("%w at %s: %s", ErrRefused, r.peer, code)
			}
			if !r.verified(&h, r.rbuf[:n]) {
				if h.Type == wire.TypeCookie && h.Flags&wire.FlagAuth == 0 {
					// An unsigned Cookie for this Hello's nonce: a
					// reflector without a key (one from before
					// ErrorNoKey) took the Hello.
					return r.noKey()
				}
				badTags++
				continue
			}
			if h.Type == wire.TypeCookie {
				r.token = h.Token
				r.segs = []segment{{token: h.Token, nonce: nonce, first: 1}}
				r.session.Store(&sessionKey{token: h.Token, nonce: nonce})
				r.grant = result.Grant{ReplySize: int(h.ReplySize), Hold: time.Duration(h.HoldMicro) * time.Microsecond, MaxRate: float64(h.RateLimit)}
				r.lastHeard = r.clk.Now()
				r.sameClock = sameClock(r.clk, &h)
				r.opened = r.lastHeard
				return nil
			}
		}
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if badTags > 0 {
		return fmt.Errorf("%w at %s: its answers carry no valid tag (it has no key, or another)", ErrAuth, r.peer)
	}
	over := time.Duration(r.cfg.HandshakeTries) * r.cfg.Timeout
	return fmt.Errorf("%w at %s after %d tries over %s", ErrNoReflector, r.peer, r.cfg.HandshakeTries, over)
}

// sameClock reports whether the reflector whose Cookie is h reads the
// client's clock clk (see wire.FlagClockID).
func sameClock(clk clock.Clock, h *wire.Header) bool {
	id := wire.ClockIDOf(h)
	return id != 0 && id == clock.IdentityOf(clk)
}

// noKey is the error of a keyed handshake with a reflector that has no
// key.
func (r *run) noKey() error {
	return fmt.Errorf("%w at %s: the reflector has no key (give it the same --key or --key-file, or run the client without one)", ErrAuth, r.peer)
}

// hello returns the Hello with nonce, and clears the send buffer it goes
// out in: the Hello is as large as the probes, so the reflector may answer
// a client of any size without ever amplifying.
func (r *run) hello(nonce uint64) wire.Header {
	clear(r.buf)
	return wire.Header{Type: wire.TypeHello, Seq: nonce, ReplySize: uint32(r.cfg.ReplySize), HoldMicro: uint32(r.cfg.Hold / time.Microsecond)}
}

// helloMsg returns the send buffer's part a Hello goes out in: all of it
// over datagrams, as said above; over a stream (TCP, Unix), whose
// connection shows the client's address already, the header (and tag)
// alone, since a reflector takes only small messages from a connection
// before its handshake.
func (r *run) helloMsg() []byte {
	if r.stream {
		return r.buf[:min(len(r.buf), wire.HeaderLen+wire.TagLen)]
	}
	return r.buf
}

// encode writes h into msg, signed when there is a key (the tag takes the
// last bytes of msg).
func (r *run) encode(h *wire.Header, msg []byte) { h.Seal(msg, r.signer) }

// verified reports whether msg, whose header is h, is properly signed, or
// needs no signature.
func (r *run) verified(h *wire.Header, msg []byte) bool {
	return r.signer == nil || (h.Flags&wire.FlagAuth != 0 && r.signer.Verify(msg) == nil)
}

// gone is the error of a run whose reflector went away, from the error
// err that said so (nil: the sender's).
func (r *run) gone(err error) error {
	if r.conn.RemoteAddr().Network() == "dbus" && err != nil {
		return fmt.Errorf("%w: %s: %v", ErrGone, r.peer, err)
	}
	return fmt.Errorf("%w: %s port unreachable", ErrGone, r.peer)
}

func (r *run) noReflector(err error) error {
	if transport.IsRefused(err) {
		switch {
		case r.conn.RemoteAddr().Network() == "dbus":
			return fmt.Errorf("%w at %s: no connection on the bus has that name", ErrNoReflector, r.peer)
		case r.stream:
			// It took the connection, then closed it: something listens.
			return fmt.Errorf("%w at %s: it closed the connection without answering (%v)", ErrNoReflector, r.peer, err)
		}
		return fmt.Errorf("%w at %s: port unreachable (nothing listens there)", ErrNoReflector, r.peer)
	}
	return fmt.Errorf("%w at %s: %w", ErrNoReflector, r.peer, err)
}

// loop sends probes (or, in an open-loop run, takes them from the sender)
// and handles replies until the run is over.
func (r *run) loop(ctx context.Context) error {
	cfg := &r.cfg
	now := r.clk.Now()
	r.warm = cfg.WarmupDuration > 0 || cfg.WarmupCount > 0
	warmUntil := now + int64(cfg.WarmupDuration)
	if !r.warm {
		r.startMeasuring(now)
	}
	r.sending = true
	r.oldest = 1
	if r.open {
		start := now // now moves on in the loop below
		r.senderWG.Go(func() { r.sender(ctx, start) })
	}
	var deadline int64 // the read deadline currently set
	var measured uint64
	for {
		if r.open {
			r.drain()
			if r.stamps != nil {
				// Probes that get no reply leave their transmit stamps
				// on the socket, where they take receive buffer room.
				r.drainTx()
			}
		}
		// Declare timed-out probes lost, oldest first.
		for r.inflight > 0 {
			s := &r.ring[r.oldest&r.mask]
			if s.seq != r.oldest || s.state != stateOutstanding {
				r.oldest++
				continue
			}
			if now-s.sent < int64(cfg.Timeout) {
				break
			}
			r.lose(s)
			r.oldest++
		}
		if !r.open && r.warm && ((cfg.WarmupDuration > 0 && now >= warmUntil) || (cfg.WarmupCount > 0 && r.seq >= cfg.WarmupCount)) {
			r.endWarmup(r.seq, now)
		}
		r.flushDue(now)
		switch {
		case !r.sending:
		case r.open:
			if r.senderDone.Load() {
				r.drain() // what it sent between the last drain and stopping
				if r.warm {
					r.endWarmup(r.seq, now) // stopped while warming up
				}
				r.stopSending(r.senderStop)
				if r.senderGone.Load() { // only without Reconnect
					return r.gone(nil)
				}
				if r.senderErr != nil {
					return r.stalled(r.senderErr)
				}
			}
		case ctx.Err() != nil:
			r.stopSending("interrupted")
			if r.warm {
				r.endWarmup(r.seq, now)
			}
		case r.warm:
		case cfg.Count > 0 && measured >= cfg.Count:
			r.stopSending("count")
		case r.sendUntil != 0 && now >= r.sendUntil:
			r.stopSending("duration")
		}
		if !r.sending && (r.inflight == 0 || now >= r.drainBy) {
			return nil // what is still in flight is lost
		}
		if r.recon != nil {
			if err := r.reconnectStep(now); err != nil {
				return err
			}
		} else if r.inflight > 0 && now-r.lastHeard >= int64(cfg.Silence) {
			if err := r.lostSession(now, "silent", fmt.Errorf("%w: %s sent no reply for %s", ErrSilent, r.peer, cfg.Silence)); err != nil {
				return err
			}
			continue
		}
		for !r.open && r.sending && r.recon == nil && r.inflight < cfg.Window && r.burstOpen(now) && now >= r.nextSendAt &&
			!(cfg.Count > 0 && !r.warm && measured >= cfg.Count) {
			if err := r.send(); err != nil {
				if errors.Is(err, ErrStalled) {
					return r.stalled(err)
				}
				if transport.IsRefused(err) {
					if err := r.lostSession(now, "gone", r.gone(err)); err != nil {
						return err
					}
					break
				}
				r.cur.counts.Errors++
				break
			}
			now = r.clk.Now()
			if !r.warm {
				measured++
				r.burstSent++
			} else if cfg.WarmupCount > 0 && r.seq >= cfg.WarmupCount {
				// The last warm-up probe: the next is measured, even
				// when several replies came in one read.
				r.endWarmup(r.seq, now)
			}
		}

		// Wake at the earliest of: the oldest probe's timeout, the next
		// report, the end of sending, the end of warm-up, the next burst,
		// silence; and, while an open-loop sender runs, soon enough to
		// take in what it sent. A deadline already set earlier than needed
		// is left alone: an early wake-up costs one loop, a new deadline
		// per probe costs more.
		want := r.lastHeard + int64(cfg.Silence)
		if r.recon != nil {
			want = min(r.recon.nextHello, r.recon.at+int64(cfg.Reconnect))
		}
		if r.inflight > 0 {
			if s := &r.ring[r.oldest&r.mask]; s.state == stateOutstanding {
				want = min(want, s.sent+int64(cfg.Timeout))
			}
		}
		if r.reportDue(r.nextReport) {
			want = min(want, r.nextReport)
		}
		if r.sending {
			switch {
			case r.open:
				want = min(want, now+int64(drainEvery))
			case r.sendUntil != 0:
				want = min(want, r.sendUntil)
			}
			if cfg.Burst > 0 && !r.burstOpen(now) {
				want = min(want, r.periodEnd)
			}
			if r.nextSendAt > now {
				want = min(want, r.nextSendAt)
			}
		}
		if r.warm && cfg.WarmupDuration > 0 && !r.open {
			want = min(want, warmUntil)
		}
		if !r.sending {
			want = min(want, r.drainBy)
		}
		if deadline <= now || want < deadline {
			deadline = want
			if err := r.conn.SetReadDeadline(r.clk.Time(deadline)); err != nil {
				return fmt.Errorf("set read deadline: %w", err)
			}
		}
		if ctx.Err() != nil && r.sending && !r.open {
			continue // stop sending at the top of the loop, then drain
		}
		k, err := r.read()
		now = r.clk.Now()
		if err != nil {
			switch {
			case errors.Is(err, os.ErrDeadlineExceeded):
				if r.stamps != nil && !r.open {
					// Nothing came: the transmit stamps of what got no
					// answer (lost probes, Hellos while reconnecting)
					// would stay on the socket, taking receive buffer
					// room, until the next reply. The open loop drains
					// at every turn.
					r.drainTx()
				}
				if ctx.Err() != nil {
					// Interrupted: the deadline was forced. Stop
					// sending (the open-loop sender sees ctx itself)
					// and give in-flight probes their timeout.
					deadline = 0
					if r.sending && !r.open {
						r.stopSending("interrupted")
					}
				}
			case transport.IsRefused(err):
				if err := r.lostSession(now, "gone", r.gone(err)); err != nil {
					return err
				}
			case errors.Is(err, net.ErrClosed):
				return err
			case r.stream:
				// A stream's read fails for the stream, not for a
				// message: one that says so again at every read (a
				// frame longer than a stream carries) would spin.
				r.stopSending("reflector-broken")
				r.broken = true
				return fmt.Errorf("%w: %s: %w", ErrBroken, r.peer, err)
			default:
				r.cur.counts.Errors++
			}
			continue
		}
		for i := range k {
			m := &r.in[i]
			if err := r.receive(m.Buf[:m.N], now, m.Stamp); err != nil {
				return err
			}
		}
	}
}

// recvBatch is the most replies a run reads in one call, where the
// connection moves batches and the run has more than one probe in flight.
const recvBatch = 16

// read reads what arrived into r.in: several messages where the
// connection moves batches, one otherwise (and always in ping-pong, where
// only one can be waiting and a plain read is the cheapest).
func (r *run) read() (int, error) {
	if r.in == nil {
		// One at a time, into the handshake's buffer: the two never
		// read at once.
		r.in = []transport.Message{{Buf: r.rbuf}}
		if bc, ok := r.conn.(transport.BatchConn); ok && (r.open || r.cfg.Window > 1 || r.stamps != nil) {
			// Room for the largest message expected; a larger one is
			// cut, and then fails its checks.
			r.batch = bc
			size := max(r.cfg.Size, r.cfg.ReplySize, r.grant.ReplySize, 2048) + 1
			r.in = make([]transport.Message, recvBatch)
			for i := range r.in {
				r.in[i].Buf = make([]byte, size)
			}
		}
	}
	if r.batch != nil {
		return r.batch.ReadBatch(r.in)
	}
	n, err := r.conn.Read(r.in[0].Buf)
	if err != nil {
		return 0, err
	}
	r.in[0].N = n
	return 1, nil
}

// receive handles the message msg received at now; an error ends the run.
func (r *run) receive(msg []byte, now int64, rx tstamp.Stamp) error {
	var h wire.Header
	if h.Decode(msg) != nil || !r.verified(&h, msg) {
		r.cur.counts.Errors++
		return nil
	}
	if r.recon != nil && h.Seq == r.recon.nonce && (h.Type == wire.TypeCookie || h.Type == wire.TypeError) {
		if h.Type == wire.TypeError {
			r.stopSending("reflector-ended")
			return fmt.Errorf("%w at %s on reconnecting: %s", ErrRefused, r.peer, h.Code)
		}
		r.resume(&h, now)
		return nil
	}
	k := r.tokenSeg(h.Token)
	if k < 0 {
		r.cur.counts.Errors++
		return nil
	}
	switch {
	case h.Type == wire.TypeError && k == len(r.segs)-1 && r.recon == nil:
		if h.Code == wire.ErrorSession {
			err := fmt.Errorf("%w: %s no longer knows it (it restarted, or the session idled out; --reconnect opens a new one and carries on)", ErrRestarted, r.peer)
			return r.lostSession(now, "restarted", err)
		}
		r.stopSending("reflector-ended")
		if code := h.Code; code == wire.ErrorDuration {
			return fmt.Errorf("%w at %s after %s: the %s (its --max-duration)", ErrEnded, r.peer, time.Duration(now-r.opened).Round(time.Millisecond), code)
		}
		return fmt.Errorf("%w at %s: %s", ErrRefused, r.peer, h.Code)
	case h.Type == wire.TypeReply:
		if r.open {
			r.drain() // the probe may have left since the last look
		}
		r.flushDue(now) // time moved on; the reply's figures go to its probe's interval
		r.reply(&h, len(msg), now, k, msg, rx)
	}
	return nil
}

// drainEvery is how often the receiver of an open-loop run wakes to take
// in the sender's probes when no reply wakes it.
const drainEvery = 5 * time.Millisecond

// stopSending ends sending for the reason given (the first reason wins).
func (r *run) stopSending(reason string) {
	if r.res.Stopped == "" {
		r.res.Stopped = reason
	}
	if r.sendEnd == 0 {
		r.sendEnd = r.clk.Now()
		if r.open && r.senderDone.Load() {
			r.sendEnd = r.senderEnd
		}
		if r.sendUntil != 0 {
			// Deciding to stop takes a moment; the run was this long.
			r.sendEnd = min(r.sendEnd, r.sendUntil)
		}
	}
	r.sending = false
	if r.open {
		r.stopSender.Store(true)
	}
	r.beginWindDown()
}

// beginWindDown sets when the run's wind-down must end: max(Timeout, 1s)
// after the end of sending (its deadline, when it had one and is past it)
// or a signal. The probes in flight may have the first half of that, the
// close the rest. A reflector that answered nothing recently (nothing for
// a timeout, and a probe sent since then went unanswered) is not waited
// for: what it still has in flight is lost.
func (r *run) beginWindDown() {
	if r.endBy != 0 {
		return
	}
	now := r.clk.Now()
	from := now
	if r.sendUntil != 0 {
		from = min(from, r.sendUntil)
	}
	grace := endGrace(&r.cfg)
	r.endBy = from + grace
	r.drainBy = max(from+grace/2, now)
	if now-r.lastHeard >= int64(r.cfg.Timeout) && r.lastLostSent > r.lastHeard {
		r.drainBy = now
	}
}

// burstOpen reports whether a closed-loop run may send now: without bursts
// always; with them, until the period's burst is sent.
func (r *run) burstOpen(now int64) bool {
	if r.cfg.Burst == 0 || r.warm {
		return true
	}
	if now >= r.periodEnd {
		if r.periodEnd == 0 || r.cfg.Period == 0 {
			r.periodEnd = now + int64(r.cfg.Period)
		} else {
			for r.periodEnd <= now {
				r.periodEnd += int64(r.cfg.Period)
			}
		}
		r.burstSent = 0
	}
	return r.burstSent < r.cfg.Burst
}

// flushDue ends the current interval if t is past its end.
func (r *run) flushDue(t int64) {
	if !r.reportDue(r.nextReport) || t < r.nextReport {
		return
	}
	end := r.nextReport
	r.nextReport += int64(r.cfg.ReportInterval)
	if r.nextReport <= t { // a long stall: skip, do not emit empty intervals in a burst
		r.nextReport = t + int64(r.cfg.ReportInterval)
	}
	r.closeCurrent(end)
}

// reportDue reports whether an interval ends at next (0: none): the
// interval that reaches the end of sending is left to the final summary.
func (r *run) reportDue(next int64) bool {
	return next != 0 && (r.sendUntil == 0 || next < r.sendUntil)
}

// endWarmup ends the warm-up after probe last; measuring starts at now.
func (r *run) endWarmup(last uint64, now int64) {
	r.warm = false
	r.warmupLast = last
	r.startMeasuring(now)
}

func (r *run) startMeasuring(now int64) {
	r.origin = now
	r.cur.reset(now)
	r.total.reset(now)
	if r.cfg.Duration > 0 {
		r.sendUntil = now + int64(r.cfg.Duration)
	}
	if r.cfg.ReportInterval > 0 {
		r.nextReport = now + int64(r.cfg.ReportInterval)
	}
}

// send sends the next probe.
func (r *run) send() error {
	seq := r.seq + 1
	// T1 as late as possible: the bookkeeping since the last reply is not
	// part of this probe's round trip.
	now := r.clk.Now()
	h := wire.Header{Type: wire.TypeProbe, Token: r.token, Nonce: r.nonce, Seq: seq, T1: now,
		ReplySize: uint32(r.grant.ReplySize), HoldMicro: uint32(r.grant.Hold / time.Microsecond)}
	if r.warm {
		h.Flags = wire.FlagWarmup
	}
	if r.cfg.NoQuickAck {
		h.Flags |= wire.FlagNoQuickAck
	}
	buf, entry := r.buf, uint16(0)
	if r.picker != nil {
		entry = uint16(r.picker.Pick())
		e := &r.cfg.Workload[entry]
		buf = r.buf[:e.Size]
		h.ReplySize, h.HoldMicro = uint32(e.ReplySize), uint32(time.Duration(e.Hold)/time.Microsecond)
		r.nextSendAt = now + int64(e.Gap)
	}
	var txID uint32
	if r.stamps != nil {
		h.Flags |= stampsFlag(h.ReplySize, len(buf), r.signer != nil)
		txID = r.stamps.sock.NextTxID()
	}
	r.encode(&h, buf)
	if err := r.wg.probe(now, r.sendUntil); err != nil {
		return err
	}
	if _, err := r.conn.Write(buf); err != nil {
		if isStall(err) {
			return r.stallError(len(buf), now, r.clk.Now())
		}
		return err
	}
	r.flushDue(now) // the probe goes in the interval it left in
	r.track(seq, now, 0, entry)
	if r.stamps != nil {
		r.stamps.mapID(txID, seq)
	}
	if !r.warm {
		r.cur.counts.Sent++
		r.cur.bytesUp += uint64(len(buf))
	}
	return nil
}

// track starts tracking probe seq of workload entry entry, sent at sent
// (and scheduled at sched, or 0), as outstanding.
func (r *run) track(seq uint64, sent, sched int64, entry uint16) {
	r.seq = seq
	s := &r.ring[seq&r.mask]
	if s.state == stateOutstanding {
		// A whole history of newer probes went out while this one
		// waited: it is lost, and a reply that still comes is late.
		r.lose(s)
	}
	if s.k.logWait {
		r.writeLog(s.seq) // the reflector's T3k did not come in time
	}
	*s = slot{seq: seq, sent: sent, sched: sched, entry: entry, state: stateOutstanding}
	r.inflight++
	if r.measured(seq) {
		p := r.ivs[len(r.ivs)-1]
		s.iv = p.no
		p.open++
		p.last = seq
		if p.first == 0 {
			p.first = seq
		}
		if r.entries != nil {
			r.entries[entry].sent++
		}
	}
}

// loseInFlight declares every probe still outstanding lost, and returns
// how many there were.
func (r *run) loseInFlight() uint64 {
	var n uint64
	for seq := r.oldest; seq <= r.seq && r.inflight > 0; seq++ {
		if s := &r.ring[seq&r.mask]; s.seq == seq && s.state == stateOutstanding {
			r.lose(s)
			n++
		}
	}
	return n
}

// lose declares the outstanding probe in s lost.
func (r *run) lose(s *slot) {
	s.state = stateLost
	r.inflight--
	r.lastLostSent = max(r.lastLostSent, s.sent)
	if r.measured(s.seq) {
		p := r.pendingOf(s)
		r.fateOf(p).counts.Lost++
		r.lostN++
		r.segs[r.segOf(s.seq)].lost++
		if r.log != nil {
			r.log.line(s.seq, logLost, s, 0, 0, 0, 0)
		}
		if r.entries != nil {
			r.entries[s.entry].lost++
		}
		if p != nil {
			r.resolved(p)
		}
	}
}

// reply records the reply h of n bytes received at t4 in the session of
// segment k.
// msg is the reply itself and rx its kernel stamps, where the run has
// them (nil and zero otherwise). Its figures go to the interval its probe
// was sent in.
func (r *run) reply(h *wire.Header, n int, t4 int64, k int, msg []byte, rx tstamp.Stamp) {
	seq := h.Seq
	if seq == 0 || seq > r.seq {
		r.cur.counts.Errors++
		return
	}
	r.lastHeard = t4
	measured := r.measured(seq)
	s := &r.ring[seq&r.mask]
	hold := int64(h.HoldMicro) * int64(time.Microsecond)
	if s.seq != seq {
		// Older than the history: it was declared lost long ago.
		if measured {
			r.cur.counts.Late++
			if r.log != nil {
				r.log.line(seq, logLate, nil, h.T2, h.T3, t4, hold)
			}
		}
		return
	}
	var p *pending
	if measured {
		p = r.pendingOf(s)
	}
	switch s.state {
	case stateOutstanding:
		s.state = stateReceived
		s.t3[0] = h.T3
		r.inflight--
	case stateLost:
		s.state = stateLate
		s.t3[0] = h.T3
		if measured {
			r.lineOf(p).counts.Late++
			if r.log != nil {
				r.log.line(seq, logLate, s, h.T2, h.T3, t4, hold)
			}
		}
		return
	default:
		if measured {
			c := &r.lineOf(p).counts
			c.Duplicates++
			if h.T3 == s.t3[0] || h.T3 == s.t3[1] {
				c.DuplicatesDown++ // a copy of a reply
			} else {
				c.DuplicatesUp++ // the reflector's answer to another copy of the probe
				s.t3[1] = h.T3
			}
			if r.log != nil {
				r.log.line(seq, logDuplicate, s, h.T2, h.T3, t4, hold)
			}
		}
		return
	}
	// A reply sent before one already received was reordered on the way
	// down (warm-up replies show the order too).
	reorderedDown := h.T3 < r.maxT3
	r.maxT3 = max(r.maxT3, h.T3)
	if !measured {
		if r.stamps != nil {
			// A warm-up probe's transmit stamp is not wanted, but until
			// read it takes receive buffer room, and a warm-up of a few
			// thousand probes left none for the replies.
			r.drainTx()
		}
		return
	}
	if g := &r.segs[k]; seq > g.sMax {
		g.sMax, g.cAtSMax = seq, h.Received
	}
	a := r.fateOf(p)
	if r.stamps != nil && msg != nil {
		r.kernelReply(a, s, msg, t4, rx, h, hold)
	}
	if r.log != nil && !s.k.logWait {
		r.log.line(seq, logReceived, s, h.T2, h.T3, t4, hold)
	}
	a.counts.Received++
	a.bytesDown += uint64(n)
	if seq < r.highestRecv {
		a.counts.Reordered++
	} else {
		r.highestRecv = seq
	}
	if h.Flags&wire.FlagReordered != 0 {
		a.counts.ReorderedUp++
	}
	if reorderedDown {
		a.counts.ReorderedDown++
	}
	rtt := t4 - s.sent
	up := h.T2 - s.sent
	down := t4 - h.T3
	a.d[distRTT].Record(rtt)
	r.offset.add(t4, up, down)
	// The hold the reflector applied is not its response time.
	a.d[distResponse].Record(h.T3 - h.T2 - hold)
	a.d[distUp].Record(up)
	a.d[distDown].Record(down)
	if s.sched != 0 {
		a.d[distRTTSched].Record(t4 - s.sched)
	}
	if r.entries != nil {
		e := r.entries[s.entry]
		e.received++
		e.rtt.Record(rtt)
		e.response.Record(h.T3 - h.T2 - hold)
	}
	if r.cfg.Threshold > 0 && rtt > int64(r.cfg.Threshold) && r.res.Threshold == nil && seq-r.warmupLast > r.cfg.ThresholdSkip {
		r.res.Threshold = &result.ThresholdHit{Seq: seq - r.warmupLast, At: time.Duration(t4 - r.origin), RTT: time.Duration(rtt)}
		r.stopSending("threshold")
	}
	if r.prev.seq != 0 && seq == r.prev.seq+1 {
		a.d[distIPDVRTT].Record(abs(rtt - r.prev.rtt))
		a.d[distIPDVUp].Record(abs(up - r.prev.up))
		a.d[distIPDVDown].Record(abs(down - r.prev.down))
	}
	r.prev.seq, r.prev.rtt, r.prev.up, r.prev.down = seq, rtt, up, down
	if p != nil {
		p.answered(seq, h.Received, k)
		r.resolved(p)
	}
}

// measured reports whether seq is part of the results (not warm-up).
func (r *run) measured(seq uint64) bool { return !r.warm && seq > r.warmupLast }

func (r *run) lostSoFar() uint64 { return r.lostN }

// sentSoFar returns the measured probes sent: those of the intervals
// reported, and of those still pending (the current one among them).
func (r *run) sentSoFar() uint64 {
	n := r.total.counts.Sent
	for _, p := range r.ivs {
		n += p.acc.counts.Sent
	}
	return n
}

func abs(v int64) int64 {
	if v < 0 {
		return -v
	}
	return v
}

// close ends the session and asks for the reflector's final count.
func (r *run) close() {
	r.res.ReflectorCount = "last-reply"
	if r.token == 0 {
		return
	}
	// Replies that straggle in now still count as late or duplicate.
	h := wire.Header{Type: wire.TypeClose, Token: r.token, Nonce: r.nonce}
	if r.stamps != nil && r.stamps.reflector {
		h.Flags = wire.FlagStamps // the transmit stamps still owed come back with the CloseAck
	}
	tag := 0
	if r.signer != nil {
		tag = wire.TagLen
	}
	// The CloseAck is no larger than the Close: make room for what it
	// carries.
	size := wire.HeaderLen
	switch {
	case r.cfg.OneWay:
		size = wire.CloseOneWayLen
	case h.Flags&wire.FlagStamps != 0:
		size = wire.CloseStampsLen
	}
	size = min(size+tag, max(r.cfg.MaxMessage, wire.HeaderLen+tag))
	buf := r.buf[:wire.HeaderLen+tag]
	if size > len(buf) {
		buf = make([]byte, size) // once a run
	}
	// The tries share what is left of the wind-down: each waits at most
	// min(Timeout, 1s), and the last ends by endBy.
	r.beginWindDown()
	if r.cfg.OneWay && r.reorders() {
		// A probe the network reordered behind the Close still counts:
		// the first Close says how many were sent, and the reflector
		// answers once they all came, or at the next Close, sent when a
		// timeout has passed. The wait is on top of the wind-down.
		h.Flags |= wire.FlagOneWay
		h.Seq = r.sentSoFar()
		h.T1 = r.clk.Now()
		r.encode(&h, buf)
		acked, failed := r.closeTry(buf, h.T1, int64(r.cfg.Timeout), tag)
		if acked || failed {
			return
		}
		r.endBy += r.clk.Now() - h.T1
		h.Flags &^= wire.FlagOneWay
	}
	tries, most := r.cfg.HandshakeTries, int64(min(r.cfg.Timeout, time.Second))
	if r.stream {
		tries = 1 // a stream does not lose the close: sending it again is no use
	}
	for try := 0; try < tries; try++ {
		h.Seq = uint64(try + 1)
		h.T1 = r.clk.Now()
		wait := min(most, (r.endBy-h.T1)/int64(tries-try))
		if wait <= 0 {
			return
		}
		r.encode(&h, buf)
		if acked, failed := r.closeTry(buf, h.T1, wait, tag); acked || failed {
			return
		}
	}
}

// reorders reports whether the run's transport may deliver messages out of
// order: UDP may; streams, Unix datagrams and a bus keep their order.
func (r *run) reorders() bool { return r.conn.RemoteAddr().Network() == "udp" }

// closeTry sends the encoded Close msg at t1 and reads until its CloseAck
// comes (acked) or wait has passed, taking in the replies that straggle
// in meanwhile; failed says the connection failed.
func (r *run) closeTry(msg []byte, t1, wait int64, tag int) (acked, failed bool) {
	if err := r.wg.within(t1, time.Duration(wait), false); err != nil {
		return false, true
	}
	if _, err := r.conn.Write(msg); err != nil {
		return false, true
	}
	if err := r.conn.SetReadDeadline(r.clk.Time(t1 + wait)); err != nil {
		return false, true
	}
	var in wire.Header
	for {
		n, err := r.conn.Read(r.rbuf)
		now := r.clk.Now()
		if err != nil {
			return false, !errors.Is(err, os.ErrDeadlineExceeded)
		}
		if in.Decode(r.rbuf[:n]) != nil || !r.verified(&in, r.rbuf[:n]) {
			continue
		}
		k := r.tokenSeg(in.Token)
		if k < 0 {
			continue
		}
		switch {
		case in.Type == wire.TypeReply:
			r.reply(&in, n, now, k, nil, tstamp.Stamp{})
		case in.Type == wire.TypeCloseAck && in.Token == r.token:
			r.res.ReflectorCount = "close"
			r.finalCount = in.Received
			if r.stamps != nil && in.Flags&wire.FlagStamps != 0 && !r.cfg.OneWay {
				wire.FollowUps(r.rbuf[wire.HeaderLen:n-tag], r.followUp)
			}
			if r.cfg.OneWay && n > wire.HeaderLen+tag {
				var res wire.OneWayResults
				if json.Unmarshal(r.rbuf[wire.HeaderLen:n-tag], &res) == nil {
					r.oneway = &res
				}
			}
			return true, false
		}
	}
}

// finish declares what is still in flight lost, settles the direction of
// every loss, and fills in the summary.
func (r *run) finish() error {
	now := r.clk.Now()
	r.loseInFlight()
	if r.log != nil {
		if r.stamps != nil {
			r.flushLog(0) // lines still waiting for a T3k
		}
		r.log.flush() // complete, also when the run was interrupted
	}
	lost := r.lostSoFar()
	u := r.lostUp(true)
	if len(r.segs) > 1 && r.res.ReflectorCount == "close" {
		r.res.ReflectorCount = "partial"
	}
	end := now
	if r.sendEnd > r.origin {
		end = r.sendEnd
	}
	// The last interval ends where sending ended, as the summary does (it
	// is about the probes sent in it, and its rates are over its span),
	// not when the wind-down did; every probe is accounted for.
	last := r.ivs[len(r.ivs)-1]
	last.end = max(end, last.acc.start)
	r.settle(true)
	sum := r.total.interval(r.origin, end, r.cfg.Percentiles)
	sum.Start = 0
	sum.Counts.LostUp, sum.Counts.LostDown = u, lost-u
	sum.Counts.InFlight = 0 // the intervals' in flight came or were lost since
	if r.tcp != nil {
		sum.TCP = r.tcpInterval(true)
	}
	r.res.Summary = sum
	if r.entries != nil {
		r.res.Workload = workloadResults(&r.cfg, r.entries)
	}
	if r.cfg.OneWay {
		return r.finishOneWay()
	}
	r.res.Histogram = histogram(&r.cfg, r.total)
	r.res.ClockOffset = clockOffset(&r.offset, r.sameClock, sum.Up, sum.Down)
	r.res.Timestamps = r.stampsResult()
	return nil
}

// finishOneWay fills the summary of a one-way run from the reflector's
// results: what arrived, and its one-way delays.
func (r *run) finishOneWay() error {
	if r.oneway == nil {
		return fmt.Errorf("%w from %s", ErrNoResults, r.peer)
	}
	var snap stats.Snapshot
	if err := json.Unmarshal(r.oneway.Delay, &snap); err != nil {
		return fmt.Errorf("%w from %s: %w", ErrNoResults, r.peer, err)
	}
	d, err := stats.FromSnapshot(snap)
	if err != nil {
		return fmt.Errorf("%w from %s: %w", ErrNoResults, r.peer, err)
	}
	sum := &r.res.Summary
	c := &sum.Counts
	c.Received = min(r.oneway.Received, c.Sent)
	c.Lost = c.Sent - c.Received
	c.LostUp, c.LostDown = c.Lost, 0
	// Nothing comes back: whatever the reflector saw happened on the way up.
	c.Duplicates, c.Reordered = r.oneway.Duplicates, r.oneway.Reordered
	c.DuplicatesUp, c.DuplicatesDown = c.Duplicates, 0
	c.ReorderedUp, c.ReorderedDown = c.Reordered, 0
	c.LossPercent = 0
	if c.Sent > 0 {
		c.LossPercent = 100 * float64(c.Lost) / float64(c.Sent)
	}
	sum.Up = d.Summary(r.cfg.Percentiles)
	r.total.d[distUp] = d // the reflector's delays are this run's up delays
	if len(r.oneway.IPDV) > 0 {
		// An older reflector sends none, and one whose CloseAck had no
		// room for it leaves it out: the run goes without.
		var snap stats.Snapshot
		if json.Unmarshal(r.oneway.IPDV, &snap) == nil {
			if ipdv, err := stats.FromSnapshot(snap); err == nil {
				sum.IPDV.Up = ipdv.Summary(r.cfg.Percentiles)
				r.total.d[distIPDVUp] = ipdv
			}
		}
	}
	// Measured on one clock; between two, the up delays include an
	// offset that nothing came back down to estimate.
	r.res.ClockOffset = clockOffset(&r.offset, r.sameClock, sum.Up, result.Latency{})
	// Nothing came back down: what the reflector received is Received.
	sum.Throughput.ProbesPerSecDown, sum.Throughput.RequestsPerSec = 0, 0
	r.res.Histogram = histogram(&r.cfg, r.total)
	return nil
}

// histogram is the histogram a run asked for, from a: RTT, or one-way
// delay for a one-way run; nil when none was asked for.
func histogram(cfg *Config, a *acc) *result.Histogram {
	switch {
	case cfg.HistogramWidth > 0 && !cfg.OneWay:
		return a.d[distRTT].LinearHistogram("rtt", cfg.HistogramWidth)
	case cfg.Histogram == 0:
		return nil
	case cfg.OneWay:
		return a.d[distUp].Histogram("up", cfg.Histogram)
	}
	return a.d[distRTT].Histogram("rtt", cfg.Histogram)
}
