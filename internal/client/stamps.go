package client

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/volley-net/volley/internal/result"
	"github.com/volley-net/volley/internal/transport"
	"github.com/volley-net/volley/internal/tstamp"
	"github.com/volley-net/volley/internal/wire"
)

// Kernel stamps (Config.Stamps). The socket stamps each datagram it
// receives (T4k, with the read) and each it sends (T1k, from the error
// queue, numbered in send order). Where the kernel gives it, a sent
// datagram has a second, earlier transmit stamp, the scheduler's (taken as
// it entered the interface's queueing discipline): T1k minus it is the
// time the probe waited in this host's queue (the local queue, part of the
// send stack), which a bulk upload on the same interface fills. Probes
// ask the reflector for its stamps when their replies have room for the
// block (wire.Stamps): its receive stamp T2k comes with the reply, its
// transmit stamp T3k with the next reply of the session. The user-space
// times stay what they were, so the report can show what the stacks and
// the tool add.

// stamping is a run's kernel-stamp state; nil without stamps.
type stamping struct {
	sock transport.Stamper
	ids  [idRing]struct { // transmit-stamp ID to sequence number
		id  uint32
		seq uint64
	}
	tx [txRead]tstamp.TxStamp
	// An open-loop probe's stamps can be read before the receiver has
	// taken in the sender's record of it (the sender records a probe
	// before it sends it; the receiver reads records, then stamps, and
	// the sender may send many meanwhile). In an open-loop run
	// (holdEarly), such stamps wait in early, and while any wait the
	// others wait on the socket's error queue (drainTx), until the
	// receiver's next take of the records gives them out (giveEarly).
	// last is the newest ID mapped (none while !mapped).
	early     [txRead]tstamp.TxStamp
	nEarly    int
	holdEarly bool
	last      uint32
	mapped    bool
	sampler   transport.SchedSampler // the socket asks for a sample of the scheduler stamps
	// Replies whose log line waits for the reflector's T3k, oldest
	// first (a ring of sequence numbers).
	logq    []uint64
	logHead uint64
	logTail uint64
	stampCounts
}

// stampCounts is what a run's result says of its stamps, summed over a
// run's flows (-P).
type stampCounts struct {
	reflector bool   // a reply carried the reflector's stamps
	schedSeen bool   // a scheduler stamp came
	unstamped uint64 // replies read without a receive stamp
	unsent    uint64 // replies whose probe had no transmit stamp
}

func (c *stampCounts) add(o stampCounts) {
	c.reflector, c.schedSeen = c.reflector || o.reflector, c.schedSeen || o.schedSeen
	c.unstamped += o.unstamped
	c.unsent += o.unsent
}

const idRing = 4096

// txRead is the most transmit stamps drainTx reads at a time.
const txRead = 64

// kernelSlot is what a slot keeps of a probe's kernel stamps.
type kernelSlot struct {
	t1k, t4k int64
	// sched is the scheduler's transmit stamp: the local queue is
	// t1k-sched, unless T1k is the NIC's (t1kNIC; another clock's).
	sched    int64
	t2k, t3k int64
	t2, t3   int64 // the reflector's user-space times and the reply's
	t4       int64 // arrival, for the log
	hold     int64
	logWait  bool // its log line waits for T3k
	t1kNIC   bool
}

// The kernel distributions, in acc.kern.
const (
	kRTT = iota
	kResponse
	kUp
	kDown
	kSendStack
	kRecvStack
	kLocalQueue
	numKDists
)

// mapID remembers that the probe seq, in its slot, went out with
// transmit-stamp ID id.
func (rec *recorder) mapID(id uint32, seq uint64) {
	st := rec.stamps
	e := &st.ids[id%idRing]
	e.id, e.seq = id, seq
	st.last, st.mapped = id, true
}

// giveEarly gives the stamps read before their probes' records to those
// probes, once the receiver has taken in every record the sender left
// (drain). A record goes in before its probe is sent, so a stamp still
// without its probe then is not a probe's (a reconnection's Hello): it is
// dropped, and the reads go on.
func (rec *recorder) giveEarly() {
	st := rec.stamps
	for _, t := range st.early[:st.nEarly] {
		rec.takeTx(t)
	}
	st.nEarly = 0
}

// ahead reports whether id is newer than every ID mapped: its probe's
// record has not been taken in yet.
func (st *stamping) ahead(id uint32) bool { return !st.mapped || int32(id-st.last) > 0 }

// drainTx takes in the transmit stamps waiting on the socket and gives
// each to its probe's slot. In an open-loop run it stops at a read that
// had stamps of probes not yet taken in (early): the rest wait on the
// socket until giveEarly has given those theirs. A closed loop takes in
// each probe before it sends it: a stamp it cannot place is not a
// probe's.
func (rec *recorder) drainTx() {
	st := rec.stamps
	for st.nEarly == 0 {
		n, err := st.sock.ReadTxStamps(st.tx[:])
		for _, t := range st.tx[:n] {
			if !rec.takeTx(t) && st.holdEarly && st.ahead(t.ID) {
				st.early[st.nEarly] = t // at most one read's: len(st.tx)
				st.nEarly++
			}
		}
		if err != nil || n < len(st.tx) {
			return
		}
	}
}

// takeTx gives the transmit stamp t to its probe's slot; false when its
// ID is not mapped (a probe not yet taken in, or no longer known: T1k
// stays unknown).
func (rec *recorder) takeTx(t tstamp.TxStamp) bool {
	e := &rec.stamps.ids[t.ID%idRing]
	if e.id != t.ID || e.seq == 0 { // sequence numbers start at 1
		return false
	}
	s := &rec.ring[e.seq&rec.mask]
	// A stamp is the probe's only if it was taken after the tool read
	// the clock for it. The scheduler's comes first, but either may be
	// read first.
	switch {
	case s.seq != e.seq || t.Best() < s.sent:
	case t.Sched:
		if s.kern.sched == 0 {
			s.kern.sched = t.SW
		}
		rec.stamps.schedSeen = true
	case s.kern.t1k == 0:
		s.kern.t1k, s.kern.t1kNIC = t.Best(), t.HW != 0
	}
	return true
}

// kernelReply records the kernel figures of the reply to s (msg, read at
// t4 with stamp rx) into a.
func (rec *recorder) kernelReply(a *acc, s *slot, msg []byte, t4 int64, rx tstamp.Stamp, h *wire.Header, hold int64) {
	st := rec.stamps
	ak := a.kernel()
	ks := &s.kern
	ks.t4k = rx.Best()
	if ks.t4k == 0 {
		st.unstamped++
	}
	if ks.t1k == 0 {
		rec.drainTx()
	}
	if ks.t1k == 0 {
		st.unsent++
	}
	if ks.t1k != 0 {
		ak[kSendStack].Record(ks.t1k - s.sent)
		if ks.sched != 0 && !ks.t1kNIC && ks.t1k >= ks.sched {
			ak[kLocalQueue].Record(ks.t1k - ks.sched)
		}
		if ks.t4k != 0 {
			ak[kRTT].Record(ks.t4k - ks.t1k)
		}
	}
	if ks.t4k != 0 {
		ak[kRecvStack].Record(t4 - ks.t4k)
	}
	ks.t2, ks.t3, ks.t4, ks.hold = h.T2, h.T3, t4, hold
	ext, ok := wire.StampsOf(msg)
	if !ok {
		return
	}
	st.reflector = true
	ks.t2k = ext.T2K
	if ks.t2k != 0 && ks.t1k != 0 {
		ak[kUp].Record(ks.t2k - ks.t1k)
	}
	if rec.log != nil {
		ks.logWait = true
		rec.queueLog(s.seq)
	}
	rec.followUp(ext.PrevSeq, ext.PrevT3K)
}

// followUp records the reflector's kernel transmit time t3k of its reply
// to probe seq (0: none): the kernel response and down delay, in the
// probe's interval (or, reported, the current one), and the probe's
// waiting log line.
func (rec *recorder) followUp(seq uint64, t3k int64) {
	if seq == 0 || t3k == 0 {
		return
	}
	p := &rec.ring[seq&rec.mask]
	if p.seq != seq || p.kern.t3k != 0 || (p.state != stateReceived && p.state != stateLate) || !rec.measured(seq) {
		return
	}
	ak := rec.lineOf(rec.pendingOf(p)).kernel()
	p.kern.t3k = t3k
	if p.kern.t2k != 0 {
		ak[kResponse].Record(p.kern.t3k - p.kern.t2k - p.kern.hold)
	}
	if p.kern.t4k != 0 {
		ak[kDown].Record(p.kern.t4k - p.kern.t3k)
	}
	if rec.log != nil {
		rec.flushLog(seq)
	}
}

// queueLog puts seq's log line in the queue of lines waiting for T3k.
func (rec *recorder) queueLog(seq uint64) {
	st := rec.stamps
	if st.logq == nil {
		st.logq = make([]uint64, len(rec.ring))
	}
	if st.logTail-st.logHead == uint64(len(st.logq)) {
		rec.writeLog(st.logq[st.logHead%uint64(len(st.logq))])
		st.logHead++
	}
	st.logq[st.logTail%uint64(len(st.logq))] = seq
	st.logTail++
}

// flushLog writes the waiting log lines up to seq (all with seq 0), in
// the order their replies came.
func (rec *recorder) flushLog(upTo uint64) {
	st := rec.stamps
	for st.logHead < st.logTail {
		seq := st.logq[st.logHead%uint64(len(st.logq))]
		if upTo != 0 && seq > upTo {
			return
		}
		rec.writeLog(seq)
		st.logHead++
	}
}

// writeLog writes the waiting log line of seq, if its slot still holds it.
func (rec *recorder) writeLog(seq uint64) {
	s := &rec.ring[seq&rec.mask]
	if s.seq != seq || !s.kern.logWait {
		return
	}
	s.kern.logWait = false
	rec.log.line(seq, logReceived, s, s.kern.t2, s.kern.t3, s.kern.t4, s.kern.hold)
}

// kernelSummary renders a's kernel distributions; nil when there are
// none.
func (a *acc) kernelSummary(pct []float64) *result.KernelTimes {
	if a.kern[kRTT].Count() == 0 && a.kern[kSendStack].Count() == 0 && a.kern[kRecvStack].Count() == 0 {
		return nil
	}
	return &result.KernelTimes{
		RTT:        a.kern[kRTT].Summary(pct),
		Response:   a.kern[kResponse].Summary(pct),
		Up:         a.kern[kUp].Summary(pct),
		Down:       a.kern[kDown].Summary(pct),
		SendStack:  a.kern[kSendStack].Summary(pct),
		RecvStack:  a.kern[kRecvStack].Summary(pct),
		LocalQueue: a.kern[kLocalQueue].Summary(pct),
	}
}

// stampsFlag returns FlagStamps when a reply to a probe of probeSize
// bytes asking for replySize (0: the probe's size) has room for the
// reflector's stamps, 0 otherwise.
func stampsFlag(replySize uint32, probeSize int, signed bool) wire.Flags {
	room := int(replySize)
	if room == 0 {
		room = probeSize
	}
	need := wire.HeaderLen + wire.StampsLen
	if signed {
		need += wire.TagLen
	}
	if room >= need {
		return wire.FlagStamps
	}
	return 0
}

// setupStamps turns the socket's stamps on as Config.Stamps asks, and
// returns the mode used ("user", "kernel" or "hardware"). Auto falls back
// to user-space times, with a note, where the socket has no stamps; an
// explicit kernel or hardware mode fails there instead.
func (r *run) setupStamps() (string, error) {
	mode := r.cfg.Stamps
	if mode == tstamp.User {
		return "user", nil
	}
	r.stampNotes = nil
	fallback := func(why string) (string, error) {
		if mode != tstamp.Auto {
			return "", fmt.Errorf("%w: --timestamps %s: %s", ErrConfig, mode, why)
		}
		r.stampNotes = append(r.stampNotes, why+"; the times are the tool's own clock readings (user)")
		return "user", nil
	}
	if r.cfg.OneWay {
		return fallback("one-way probes are timed by the reflector against the client's clock reading")
	}
	sock, _ := r.conn.(transport.Stamper)
	used, why, err := tstamp.Use(mode, sock) // why: auto fell back; err: kernel or hardware refused
	if err != nil {
		why = err
	}
	switch {
	case errors.Is(why, tstamp.ErrNoStamps):
		return fallback(r.conn.RemoteAddr().Network() + " has no stamps per message (only UDP sockets take them)")
	case why != nil:
		return fallback(fmt.Sprintf("the socket refused kernel stamps (%v)", why))
	}
	r.stamps = &stamping{sock: sock, holdEarly: r.cfg.OpenLoop()}
	// The kernel figures' histograms, now rather than at the first
	// replies, their pages touched as recorder.init does the others'
	// (openInterval makes and touches the later intervals'); nothing is
	// recorded yet.
	r.total.prepareKernel()
	r.cur.prepareKernel()
	if s, ok := sock.(transport.SchedSampler); ok {
		// One that refuses asks on every probe, as before.
		_ = s.SampleSched(r.schedEvery())
		r.stamps.sampler = s
	}
	return used.String(), nil
}

// The scheduler's stamp of a probe (its local queue) is an error-queue
// entry of its own, which costs the client as much to read as the
// probe's transmit stamp. Open-loop probes ask for it on every probe up
// to schedRate probes/s, and above on one in ceil(rate/schedRate) (one in
// 10 at 100k/s); at --rate max, whose rate is not known before, on one in
// unpacedSchedEvery. That is prime to the sender's batch of sendBatch, so
// that the sample takes every place in a batch in turn. A systematic
// sample of 10k a second describes the local queue as well, and the
// client keeps the time for its probes.
const (
	schedRate         = 10_000
	unpacedSchedEvery = 31
)

// schedEvery is one probe in how many that asks for its scheduler stamp.
func (r *run) schedEvery() uint32 {
	cfg := &r.cfg
	switch {
	case cfg.Unpaced:
		return unpacedSchedEvery
	case cfg.SendInterval > 0:
		gap := time.Second / schedRate
		return uint32(max(1, (gap+cfg.SendInterval-1)/cfg.SendInterval))
	case cfg.Rate > 0:
		return uint32(max(1, math.Ceil(cfg.Rate/schedRate)))
	}
	return 1 // a closed loop: its rate follows its round trips
}

// schedEvery is one probe in how many that asked for its scheduler
// stamp, as the socket says (it may have gone back to every probe).
func (st *stamping) schedEvery() uint32 {
	if st.sampler == nil {
		return 1
	}
	return st.sampler.SchedEvery()
}

// stampsResult says where the run's times came from.
func (r *run) stampsResult() *result.Timestamps {
	if r.stamps == nil {
		return r.stampsResultOf(stampCounts{})
	}
	return r.stampsResultOf(r.stamps.stampCounts)
}

// stampsOfFlows is stampsResult for the flows runs (-P) together: their
// sockets are alike, their counts summed.
func stampsOfFlows(runs []*run) *result.Timestamps {
	var c stampCounts
	for _, r := range runs {
		if r.stamps != nil {
			c.add(r.stamps.stampCounts)
		}
	}
	return runs[0].stampsResultOf(c)
}

// stampsResultOf is stampsResult with the counts c.
func (r *run) stampsResultOf(c stampCounts) *result.Timestamps {
	if r.cfg.Stamps == tstamp.User {
		return nil
	}
	t := &result.Timestamps{Asked: r.cfg.Stamps.String(), Client: r.res.Config.Timestamps, Notes: r.stampNotes}
	if st := r.stamps; st != nil {
		if c.reflector {
			t.Reflector = t.Client
		} else if r.cfg.Stamps != tstamp.Auto {
			// Only for a run that asked for stamps: auto takes what
			// there is, and a default run's 64-byte replies have no
			// room for the reflector's (--timestamps kernel says why).
			t.Notes = append(t.Notes, fmt.Sprintf("the reflector sent no stamps: replies need %d bytes or more to carry them (--reply-size), or the reflector runs with --timestamps user or over a socket without stamps",
				wire.HeaderLen+wire.StampsLen))
		}
		if every := st.schedEvery(); every > 1 && c.schedSeen {
			t.Notes = append(t.Notes, fmt.Sprintf("send queue is a sample: above %d probes/s one probe in %d asks for the kernel's scheduler stamp (docs/timestamps.md)",
				schedRate, every))
		}
		if c.unstamped > 0 {
			t.Notes = append(t.Notes, fmt.Sprintf("%d replies came without a kernel receive stamp", c.unstamped))
		}
		if c.unsent > 0 {
			t.Notes = append(t.Notes, fmt.Sprintf("%d replies' probes had no kernel transmit stamp (dropped when the socket's or the NIC's buffers were full, or read too late): rtt kern, up kern, send stack and send queue leave them out", c.unsent))
		}
	}
	return t
}
