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
	"runtime"
	"sync/atomic"
	"time"

	"github.com/volley-net/volley/internal/clock"
	"github.com/volley-net/volley/internal/result"
	"github.com/volley-net/volley/internal/transport"
	"github.com/volley-net/volley/internal/wire"
	"github.com/volley-net/volley/internal/workload"
)

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
	timer transport.ReadTimer // its single reads say when each message came; nil: they do not

	// The session (session.go).
	token     uint64
	nonce     uint64       // the Hello's; probes and the close carry it
	signer    *wire.Signer // nil without a key
	grant     result.Grant
	opened    int64 // when the session (the last one) opened
	lastHeard int64 // when the reflector was last heard from (see heardAt)
	// afterStall: silence counts from no earlier than this; each stall of
	// the loop's own moves it on by the stall's length (see readFailed).
	afterStall int64
	sameClock  bool                // every session's reflector reads the client's clock
	oneway     *wire.OneWayResults // a one-way run's, from the CloseAck
	foreign    Foreign             // nil: a volley reflector (see foreign.go)
	answerer   Answerer            // the foreign peer's, when it answers without replies
	answers    uint64              // its count at the last look
	path       *pathRecorder       // nil: the run reads no path (see pathmark.go)
	pathFlag   wire.Flags          // wire.FlagPath when path is not nil

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
	if cfg.Samples != nil {
		r.samples = cfg.Samples.flow(1, 1)
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
	stream := network == "tcp" || network == "unix"
	if f, ok := conn.(Foreign); ok {
		// Named by its protocol; and its adapter's messages are whole,
		// whatever it speaks underneath (a connect:// run's TCP).
		network, stream = f.Peer().Protocol, false
	}
	r := &run{
		cfg:    cfg,
		conn:   conn,
		clk:    cfg.Clock,
		peer:   network + "://" + conn.RemoteAddr().String(),
		buf:    make([]byte, cfg.Size),
		rbuf:   make([]byte, cfg.MaxMessage+1),
		stream: stream,
	}
	r.recorder.init(&r.cfg)
	if cfg.openLoop() {
		r.openLoop = newOpenLoop(&r.cfg)
	} else if len(cfg.Workload) > 0 {
		r.closedLoop.picker = workload.NewPicker(cfg.Workload, cfg.Seed)
	}
	r.guard = newWriteGuard(r)
	if len(cfg.Key) > 0 {
		r.signer = wire.NewSigner(cfg.Key)
	}
	return r
}

// loopWaiting runs the loop with its reads waiting in the kernel on this
// goroutine's thread (transport.WaitInKernel), the lightest wait for a
// reply, where it fits (waitsInKernel).
func (r *run) loopWaiting(ctx context.Context) error {
	if r.waitsInKernel() {
		undo, on := transport.WaitInKernel(r.conn)
		defer undo()
		r.closedLoop.yields = on
	}
	return r.loop(ctx)
}

// kernelWaitSlack is the shortest wait a run that waits in the kernel may
// need kept to the time: the kernel's timeout wakes up to two of its ticks
// late (8 ms at HZ=250).
const kernelWaitSlack = 50 * time.Millisecond

// waitsInKernel says whether the run's reads wait in the kernel: a
// closed-loop run alone in its process (not Config.Shared: a hundred
// monitored targets do not take a hundred threads) that never needs a
// wake-up finer than the kernel's tick. Open-loop runs (whose receiver
// wakes every few ms for the sender's probes, and whose sender writes
// meanwhile), bursts with a period, workload gaps and short timeouts keep
// the poller's finer timers.
func (r *run) waitsInKernel() bool {
	cfg := &r.cfg
	if cfg.Shared || r.openLoop != nil || cfg.Period > 0 || cfg.Timeout < kernelWaitSlack {
		return false
	}
	for _, e := range cfg.Workload {
		if e.Gap > 0 {
			return false
		}
	}
	return true
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
	err := r.loopWaiting(ctx)
	if r.openLoop != nil {
		err = r.endSender(err)
	}
	if r.broken || r.foreign != nil || errors.Is(err, ErrSilent) || errors.Is(err, ErrGone) || errors.Is(err, ErrRestarted) {
		r.res.ReflectorCount = "last-reply"
	} else {
		r.close()
	}
	if ferr := r.finish(); err == nil {
		err = ferr
	}
	if r.foreign != nil {
		r.res.PeerResults = r.foreign.PeerResults()
	}
	if err != nil {
		r.res.Error = err.Error()
	}
	return err
}
