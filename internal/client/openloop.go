package client

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/volley-net/volley/internal/result"
	"github.com/volley-net/volley/internal/sched"
)

// An open-loop run (--rate, --send-interval) has two goroutines: the
// sender (sender.go) paces probes and writes them, the receiver (the run's
// loop) reads replies and has the recorder do all the accounting. The
// sender hands each probe over through a single-producer single-consumer
// queue before writing it, so the receiver knows a probe before its reply
// can arrive. Neither side locks.

// sentRecord is what the sender tells the receiver about one probe.
type sentRecord struct {
	seq     uint64
	sent    int64  // when it was written (T1)
	sched   int64  // when the schedule said it should leave
	skipped uint64 // slots skipped just before it (after a stall)
	size    int    // bytes
	entry   uint16 // workload entry
	gen     uint32 // segment (session) it was sent in
	txID    uint32 // its transmit stamp's ID, with kernel stamps
	warm    bool
}

// sentQueue is a lock-free single-producer single-consumer ring.
type sentQueue struct {
	buf  []sentRecord
	mask uint64
	head atomic.Uint64 // next slot to write; the producer's
	tail atomic.Uint64 // next slot to read; the consumer's
}

func newSentQueue(size int) *sentQueue {
	return &sentQueue{buf: make([]sentRecord, size), mask: uint64(size - 1)}
}

// push adds rec and reports false when the queue is full.
func (q *sentQueue) push(rec sentRecord) bool {
	h := q.head.Load()
	if h-q.tail.Load() == uint64(len(q.buf)) {
		return false
	}
	q.buf[h&q.mask] = rec
	q.head.Store(h + 1)
	return true
}

// pop takes the oldest record, if any.
func (q *sentQueue) pop() (sentRecord, bool) {
	t := q.tail.Load()
	if t == q.head.Load() {
		return sentRecord{}, false
	}
	rec := q.buf[t&q.mask]
	q.tail.Store(t + 1)
	return rec, true
}

// cpuMark is the process's CPU time as an open-loop run starts
// measuring, read at at (wall time, Unix ns; ok false: not an open-loop
// run, or no CPU time here).
type cpuMark struct {
	at           int64
	user, system time.Duration
	ok           bool
}

// markCPU marks the start of measuring for Result.CPU: runs with a
// schedule (or --rate max), alone in their process (a monitor's targets
// share theirs).
func markCPU(cfg *Config) cpuMark {
	if (!cfg.openLoop() && !cfg.Unpaced) || cfg.Shared {
		return cpuMark{}
	}
	user, system, err := sched.ProcessCPU()
	return cpuMark{at: time.Now().UnixNano(), user: user, system: system, ok: err == nil}
}

// minCPUSpan is the shortest span Result.CPU is given for: the kernel
// splits a process's CPU time between user and system by its ticks.
const minCPUSpan = 100 * time.Millisecond

// until returns what the process used from the mark to now, over the wall
// time between the two readings (which goes on past the end of sending,
// until the loop noticed: over that end, a run of five probes was said to
// keep 2.8 of 2 CPUs busy); nil without a mark, or over less than
// minCPUSpan.
func (m cpuMark) until() *result.CPU {
	if !m.ok {
		return nil
	}
	user, system, err := sched.ProcessCPU()
	span := time.Duration(time.Now().UnixNano() - m.at)
	if err != nil || span < minCPUSpan {
		return nil
	}
	return &result.CPU{Seconds: span.Seconds(), User: (user - m.user).Seconds(),
		System: (system - m.system).Seconds(), CPUs: runtime.NumCPU()}
}

// meanGap is the mean time between probes of an open-loop run.
func (r *run) meanGap() time.Duration {
	if r.cfg.SendInterval > 0 {
		return r.cfg.SendInterval
	}
	return time.Duration(1e9 / r.cfg.Rate)
}

// drain takes in what the sender sent since the last call.
func (r *run) drain() {
	// The errors of batches whose records are taken in now, counted after
	// them: the first measured probes' are not lost as the measurement
	// starts with them.
	e := r.openLoop.errors.Swap(0)
	for {
		rec, ok := r.openLoop.sent.pop()
		if !ok {
			break
		}
		r.sentScheduled(&rec)
	}
	if e > 0 {
		r.countErrors(e)
	}
	if r.stamps != nil {
		r.giveEarly() // their probes are all taken in now
	}
}

// openLoop is what the two goroutines of an open-loop run share. The
// sender writes stop, end and err before it sets done, and the receiver
// reads them after.
type openLoop struct {
	sent    *sentQueue
	done    atomic.Bool   // set by the sender as it returns
	stop    string        // why the sender stopped
	end     int64         // when the sender stopped
	err     error         // the sender's write that stalled
	halt    atomic.Bool   // set by the receiver: the sender stops
	gone    atomic.Bool   // the sender saw the port unreachable
	errors  atomic.Uint64 // write errors the receiver has not counted yet
	wg      sync.WaitGroup
	session atomic.Pointer[sessionKey] // the sender's session
}

func newOpenLoop(cfg *Config) *openLoop { return &openLoop{sent: newSentQueue(sentQueueSize(cfg))} }

// takeSent takes in what the open-loop sender sent since the last look,
// and the transmit stamps of the probes that get no reply, which take
// receive buffer room on the socket.
func (r *run) takeSent() {
	r.drain()
	if r.stamps != nil {
		r.drainTx()
	}
}

// senderStopped ends sending once the open-loop sender has stopped, at
// now; an error (the sender found the reflector gone, or a write stalled)
// ends the run.
func (r *run) senderStopped(now int64) error {
	ol := r.openLoop
	if !ol.done.Load() {
		return nil
	}
	r.drain() // what it sent between the last drain and stopping
	if r.warm {
		r.endWarmup(r.seq, now) // stopped while warming up
	}
	r.stopSending(ol.stop)
	if ol.gone.Load() { // only without Reconnect
		return r.gone(nil)
	}
	if ol.err != nil {
		return r.stalled(ol.err)
	}
	return nil
}

// endSender waits for the open-loop sender of a loop that ended with err,
// asking it to stop, takes in its last probes, and returns the error the
// run ends with.
func (r *run) endSender(err error) error {
	ol := r.openLoop
	ol.halt.Store(true)
	if err != nil {
		// The run is over: a write the sender is blocked in (the
		// reflector stopped reading) must not hold it.
		r.endWrites(r.clk.Now())
	}
	ol.wg.Wait()
	r.drain()
	if ol.err != nil {
		// Its write was cut: part of a message may have gone.
		r.broken = true
		if err == nil {
			err = ol.err
		}
	}
	return err
}
