package client

import (
	"time"

	"github.com/volley-net/volley/internal/result"
	"github.com/volley-net/volley/internal/stats"
	"github.com/volley-net/volley/internal/transport"
	"github.com/volley-net/volley/internal/tstamp"
	"github.com/volley-net/volley/internal/wire"
)

// recorder does a run's accounting: it owns the probe history (a ring of
// slots), the intervals' accumulators and the total, the sessions'
// segments, the workload entries' figures, the kernel stamps and the probe
// log, and makes the result's figures of them. The loop calls it as probes
// leave, replies come and time passes; nothing else counts.
type recorder struct {
	cfg     *Config
	res     *result.Result
	handler Handler // never nil

	ring []slot
	mask uint64

	seq        uint64 // last sequence number sent
	warmupLast uint64 // last warm-up sequence number (0: none yet)
	warm       bool   // still warming up
	origin     int64  // end of warm-up: time zero of the results
	sendUntil  int64  // stop sending at this time (0: no limit yet)
	nextReport int64  // end of the current interval (0: none)
	inflight   int
	oldest     uint64 // lowest sequence number that may be outstanding
	// lastLostSent is when the latest probe declared lost was sent.
	lastLostSent int64
	// firstUnanswered is when the first probe sent since the reflector was
	// last heard from left (0: none since); see run.quietSince.
	firstUnanswered int64
	highestRecv     uint64
	maxT3           int64    // the latest reflector send time of a reply received, for reordering down
	prev            struct { // the last probe received, for IPDV
		seq           uint64
		rtt, up, down int64
	}
	lostN uint64 // measured probes declared lost

	log      *probeLog    // nil without --log
	samples  *flowSamples // nil without --plot
	observer Observer     // nil unless Config.Observer
	stamps   *stamping    // nil without kernel stamps
	cpu      cpuMark      // the process's CPU time as measuring started
	entries  []*entryAcc  // per workload entry; nil without a workload
	offset   offsetEst    // the smallest delays of each window, for the clock offset

	// A foreign peer's replies may carry no T2 and T3 (noOneWay: no up,
	// down or response time) or no count of probes received
	// (noDirections: loss, duplicates and reorders are not split by
	// direction). See foreign.go.
	noOneWay, noDirections bool

	// The sessions of the run (see reconnect.go); between is true while
	// the last one is lost and no new one opened yet.
	segs       []segment
	between    bool
	finalCount uint64 // the reflector's count from its CloseAck

	// The intervals pending (see intervals.go), oldest first: the last
	// is the current one, whose accumulator is cur. total gathers the
	// reported ones, for the summary.
	ivs        []*pending
	freeIvs    []*pending
	ivNext     uint32
	pendLimit  int
	cur, total *acc
	intervals  int               // intervals reported so far
	reportedU  uint64            // loss on the way up in the intervals reported
	tcp        transport.TCPConn // nil unless over TCP
	tcpRetrans uint32            // the connection's retransmits at the last interval's end
	// collect, in a parallel run, takes each interval (its number, its
	// accumulator, its span) before the accumulator is reset.
	collect func(no int, a *acc, start, end time.Duration)
}

// init prepares rec for a run of cfg (defaults filled in).
func (rec *recorder) init(cfg *Config) {
	ringSize := uint64(historySize(*cfg))
	rec.cfg = cfg
	rec.handler = handlerOf(cfg)
	rec.observer = cfg.Observer
	rec.ring, rec.mask = make([]slot, ringSize), ringSize-1
	rec.total = newAcc(cfg.Shared)
	// Touch its histograms now (reset writes every bucket), as
	// openInterval does the first interval's: their first touch faults
	// their pages in, 8-24 ms on a 2-core VM, which at the start of
	// measuring made an open-loop run's first slots late.
	rec.total.reset(0)
	rec.pendLimit = pendingLimit(cfg)
	rec.openInterval(0)
	if len(cfg.Workload) > 0 {
		rec.entries = make([]*entryAcc, len(cfg.Workload))
		for i := range rec.entries {
			rec.entries[i] = &entryAcc{rtt: stats.NewDist(), response: stats.NewDist()}
		}
	}
}

// Probe states in the history ring.
const (
	stateFree uint8 = iota
	stateOutstanding
	stateReceived
	stateLost
	stateLate // lost, then its reply came
)

// slot is what the recorder remembers of one probe, in the history ring.
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
	t3   [2]int64
	kern kernelSlot // kernel stamps (Config.Stamps)
}

// tcpInterval reads TCP_INFO for the interval that ends now: the
// retransmits since the last one, and the window and RTT now. since0 takes
// them since the connection opened instead.
func (rec *recorder) tcpInterval(since0 bool) *result.TCPInterval {
	ti, err := rec.tcp.TCPInfo()
	if err != nil {
		return nil
	}
	iv := &result.TCPInterval{Retransmits: uint64(ti.TotalRetrans - rec.tcpRetrans), Cwnd: ti.Cwnd, RTT: ti.RTT, RTTVar: ti.RTTVar}
	if since0 {
		iv.Retransmits = uint64(ti.TotalRetrans)
	} else {
		rec.tcpRetrans = ti.TotalRetrans
	}
	return iv
}

// flushDue ends the current interval if t is past its end.
func (rec *recorder) flushDue(t int64) {
	if !rec.reportDue(rec.nextReport) || t < rec.nextReport {
		return
	}
	end := rec.nextReport
	rec.nextReport += int64(rec.cfg.ReportInterval)
	if rec.nextReport <= t { // a long stall: skip, do not emit empty intervals in a burst
		rec.nextReport = t + int64(rec.cfg.ReportInterval)
	}
	rec.closeCurrent(end)
}

// reportDue reports whether an interval ends at next (0: none): the
// interval that reaches the end of sending is left to the final summary.
func (rec *recorder) reportDue(next int64) bool {
	return next != 0 && (rec.sendUntil == 0 || next < rec.sendUntil)
}

// endWarmup ends the warm-up after probe last; measuring starts at now.
func (rec *recorder) endWarmup(last uint64, now int64) {
	rec.warm = false
	rec.warmupLast = last
	rec.startMeasuring(now)
}

// startMeasuring starts measuring at now. Nothing was recorded into the
// accumulators' histograms before (init and openInterval reset them, and
// touched their pages): only their start and counts begin again, cheaply,
// since an open-loop run starts here with probes in flight.
func (rec *recorder) startMeasuring(now int64) {
	rec.origin = now
	rec.cpu = markCPU(rec.cfg)
	rec.cur.restart(now)
	rec.total.restart(now)
	if rec.cfg.Duration > 0 {
		rec.sendUntil = now + int64(rec.cfg.Duration)
	}
	if rec.cfg.ReportInterval > 0 {
		rec.nextReport = now + int64(rec.cfg.ReportInterval)
	}
}

// expire declares the probes whose timeout passed by now lost, oldest
// first.
func (rec *recorder) expire(now int64) {
	for rec.inflight > 0 {
		s := &rec.ring[rec.oldest&rec.mask]
		if s.seq != rec.oldest || s.state != stateOutstanding {
			rec.oldest++
			continue
		}
		if now-s.sent < int64(rec.cfg.Timeout) {
			break
		}
		rec.lose(s)
		rec.oldest++
	}
}

// oldestDue returns when the oldest probe outstanding times out, if there
// is one. The slots before it that were answered are passed, as expire passes
// them: in a ping-pong, where a reply leaves nothing in flight at the
// loop's expire, the oldest slot was the last one answered, and the probe
// after it had no timeout to wake for (found by an outside test: with no
// interval reports, a reply held up a second was taken as a 1 s round
// trip instead of a loss at --timeout).
func (rec *recorder) oldestDue() (int64, bool) {
	for rec.inflight > 0 && rec.oldest <= rec.seq {
		s := &rec.ring[rec.oldest&rec.mask]
		if s.seq != rec.oldest || s.state != stateOutstanding {
			rec.oldest++
			continue
		}
		return s.sent + int64(rec.cfg.Timeout), true
	}
	return 0, false
}

// sent records the closed-loop probe seq of workload entry entry, size
// bytes, written at now with transmit-stamp ID txID.
func (rec *recorder) sent(seq uint64, now int64, entry uint16, size int, txID uint32) {
	rec.flushDue(now) // the probe goes in the interval it left in
	rec.track(seq, now, 0, entry)
	if rec.stamps != nil {
		rec.mapID(txID, seq)
	}
	if !rec.warm {
		rec.cur.counts.Sent++
		rec.cur.bytesUp += rec.wire(size)
	}
}

// sentScheduled records the open-loop probe the sender says it sent in
// sr. A one-way probe is counted, not tracked: no reply will come.
func (rec *recorder) sentScheduled(sr *sentRecord) {
	if rec.warm && !sr.warm {
		rec.endWarmup(sr.seq-1, sr.sched)
	}
	if g := &rec.segs[sr.gen]; g.first == 0 {
		g.first = sr.seq // the first probe of a new session
	}
	measured := rec.measured(sr.seq)
	if measured {
		rec.flushDue(sr.sched) // a probe belongs to the interval of its slot
	}
	if rec.cfg.OneWay {
		rec.seq = sr.seq // nothing to wait for
	} else {
		rec.track(sr.seq, sr.sent, sr.sched, sr.entry)
		if rec.stamps != nil {
			rec.mapID(sr.txID, sr.seq)
		}
	}
	if measured {
		rec.cur.counts.Sent++
		rec.cur.counts.Skipped += sr.skipped
		rec.cur.bytesUp += rec.wire(sr.size)
		rec.cur.d[distSendError].Record(sr.sent - sr.sched)
	}
}

// track starts tracking probe seq of workload entry entry, sent at sent
// (and scheduled at sched, or 0), as outstanding.
func (rec *recorder) track(seq uint64, sent, sched int64, entry uint16) {
	rec.seq = seq
	s := &rec.ring[seq&rec.mask]
	if s.state == stateOutstanding {
		// A whole history of newer probes went out while this one
		// waited: it is lost, and a reply that still comes is late.
		rec.lose(s)
	}
	if s.kern.logWait {
		rec.writeLog(s.seq) // the reflector's T3k did not come in time
	}
	*s = slot{seq: seq, sent: sent, sched: sched, entry: entry, state: stateOutstanding}
	rec.inflight++
	if rec.firstUnanswered == 0 {
		rec.firstUnanswered = sent
	}
	if rec.measured(seq) {
		p := rec.ivs[len(rec.ivs)-1]
		s.iv = p.no
		p.outstanding++
		p.last = seq
		if p.first == 0 {
			p.first = seq
		}
		if rec.entries != nil {
			rec.entries[entry].sent++
		}
	}
}

// loseInFlight declares every probe still outstanding lost, and returns
// how many there were.
func (rec *recorder) loseInFlight() uint64 {
	var n uint64
	for seq := rec.oldest; seq <= rec.seq && rec.inflight > 0; seq++ {
		if s := &rec.ring[seq&rec.mask]; s.seq == seq && s.state == stateOutstanding {
			rec.lose(s)
			n++
		}
	}
	return n
}

// lose declares the outstanding probe in s lost.
func (rec *recorder) lose(s *slot) {
	s.state = stateLost
	rec.inflight--
	rec.lastLostSent = max(rec.lastLostSent, s.sent)
	if rec.measured(s.seq) {
		p := rec.pendingOf(s)
		rec.fateOf(p).counts.Lost++
		rec.lostN++
		rec.segs[rec.segOf(s.seq)].lost++
		if rec.log != nil {
			rec.log.line(s.seq, logLost, s, 0, 0, 0, 0)
		}
		if rec.samples != nil {
			rec.sample(s, true, 0, 0, 0)
		}
		if rec.entries != nil {
			rec.entries[s.entry].lost++
		}
		if p != nil {
			rec.resolved(p)
		}
	}
}

// heard is what a reply told the loop, beyond its figures.
type heard uint8

const (
	heardNothing   heard = iota // no probe sent has its sequence number
	heardReply                  // it answers a probe sent: the reflector is there
	heardThreshold              // and its RTT is the first above the threshold: sending stops
)

// reply records the reply h of n bytes received at t4 in the session of
// segment seg. msg is the reply itself and rx its kernel stamps, where the
// run has them (nil and zero otherwise). Its figures go to the interval
// its probe was sent in.
func (rec *recorder) reply(h *wire.Header, n int, t4 int64, seg int, msg []byte, rx tstamp.Stamp) heard {
	seq := h.Seq
	if seq == 0 || seq > rec.seq {
		rec.cur.counts.Errors++
		return heardNothing
	}
	measured := rec.measured(seq)
	s := &rec.ring[seq&rec.mask]
	hold := int64(h.HoldMicro) * int64(time.Microsecond)
	if s.seq != seq {
		// Older than the history: it was declared lost long ago.
		if measured {
			rec.cur.counts.Late++
			if rec.log != nil {
				rec.log.line(seq, logLate, nil, h.T2, h.T3, t4, hold)
			}
		}
		return heardReply
	}
	if s.state == stateOutstanding && t4-s.sent >= int64(rec.cfg.Timeout) {
		// Read after its timeout but before the loop declared it lost
		// (the process stalled with the reply on its socket): lost, as
		// it would have been a moment later, and the reply late. (An
		// outside test saw a 3 s RTT with --timeout 10ms.)
		rec.lose(s)
	}
	var p *pending
	if measured {
		p = rec.pendingOf(s)
	}
	if !rec.firstReply(s, p, h, t4, hold, measured) {
		return heardReply
	}
	// A reply sent before one already received was reordered on the way
	// down (warm-up replies show the order too).
	reorderedDown := h.T3 < rec.maxT3
	rec.maxT3 = max(rec.maxT3, h.T3)
	if !measured {
		if rec.stamps != nil {
			// A warm-up probe's transmit stamp is not wanted, but until
			// read it takes receive buffer room, and a warm-up of a few
			// thousand probes left none for the replies.
			rec.drainTx()
		}
		return heardReply
	}
	if g := &rec.segs[seg]; seq > g.sMax {
		g.sMax, g.cAtSMax = seq, h.Received
	}
	a := rec.fateOf(p)
	if rec.stamps != nil && msg != nil {
		rec.kernelReply(a, s, msg, t4, rx, h, hold)
	}
	if rec.log != nil && !s.kern.logWait {
		rec.log.line(seq, logReceived, s, h.T2, h.T3, t4, hold)
	}
	rtt := rec.received(a, s, h, n, t4, hold, reorderedDown)
	got := heardReply
	if rec.cfg.Threshold > 0 && rtt > int64(rec.cfg.Threshold) && rec.res.Threshold == nil && seq-rec.warmupLast > rec.cfg.ThresholdSkip {
		rec.res.Threshold = &result.ThresholdHit{Seq: seq - rec.warmupLast, At: time.Duration(t4 - rec.origin), RTT: time.Duration(rtt)}
		got = heardThreshold
	}
	if p != nil {
		p.answered(seq, h.Received, seg)
		rec.resolved(p)
	}
	return got
}

// firstReply reports whether h, received at t4, is the first reply to the
// probe in s (of interval p, when measured); a late reply or a duplicate
// is counted here.
func (rec *recorder) firstReply(s *slot, p *pending, h *wire.Header, t4, hold int64, measured bool) bool {
	switch s.state {
	case stateOutstanding:
		s.state = stateReceived
		s.t3[0] = h.T3
		rec.inflight--
		return true
	case stateLost:
		s.state = stateLate
		s.t3[0] = h.T3
		if measured {
			rec.lineOf(p).counts.Late++
			if rec.log != nil {
				rec.log.line(s.seq, logLate, s, h.T2, h.T3, t4, hold)
			}
		}
		return false
	}
	if measured {
		c := &rec.lineOf(p).counts
		c.Duplicates++
		if h.T3 == s.t3[0] || h.T3 == s.t3[1] {
			c.DuplicatesDown++ // a copy of a reply
		} else {
			c.DuplicatesUp++ // the reflector's answer to another copy of the probe
			s.t3[1] = h.T3
		}
		if rec.log != nil {
			rec.log.line(s.seq, logDuplicate, s, h.T2, h.T3, t4, hold)
		}
	}
	return false
}

// received records into a the first reply h (n bytes, received at t4) to
// the measured probe in s, and returns its RTT.
func (rec *recorder) received(a *acc, s *slot, h *wire.Header, n int, t4, hold int64, reorderedDown bool) (rtt int64) {
	seq := s.seq
	a.counts.Received++
	a.bytesDown += rec.wire(n)
	if seq < rec.highestRecv {
		a.counts.Reordered++
	} else {
		rec.highestRecv = seq
	}
	if h.Flags&wire.FlagReordered != 0 {
		a.counts.ReorderedUp++
	}
	if reorderedDown {
		a.counts.ReorderedDown++
	}
	rtt = t4 - s.sent
	a.d[distRTT].Record(rtt)
	var up, down int64 // 0 where the peer's answers carry no times (noOneWay)
	if !rec.noOneWay {
		up, down = h.T2-s.sent, t4-h.T3
		rec.offset.add(t4, up, down)
		// The hold the reflector applied is not its response time.
		a.d[distResponse].Record(h.T3 - h.T2 - hold)
		a.d[distUp].Record(up)
		a.d[distDown].Record(down)
	}
	if rec.samples != nil {
		rec.sample(s, false, rtt, up, down)
	}
	if rec.observer != nil {
		f := Reply{Sent: time.Duration(s.sent - rec.origin), RTT: time.Duration(rtt), OneWay: !rec.noOneWay}
		if f.OneWay {
			f.Up, f.Down, f.Response = time.Duration(up), time.Duration(down), time.Duration(h.T3-h.T2-hold)
		}
		if rec.prev.seq != 0 && seq == rec.prev.seq+1 {
			f.IPDV, f.HasIPDV = time.Duration(abs(rtt-rec.prev.rtt)), true
		}
		rec.observer.Reply(f)
	}
	if s.sched != 0 {
		a.d[distRTTSched].Record(t4 - s.sched)
	}
	if rec.entries != nil {
		e := rec.entries[s.entry]
		e.received++
		e.rtt.Record(rtt)
		if !rec.noOneWay {
			e.response.Record(h.T3 - h.T2 - hold)
		}
	}
	if rec.prev.seq != 0 && seq == rec.prev.seq+1 {
		a.d[distIPDVRTT].Record(abs(rtt - rec.prev.rtt))
		if !rec.noOneWay {
			a.d[distIPDVUp].Record(abs(up - rec.prev.up))
			a.d[distIPDVDown].Record(abs(down - rec.prev.down))
		}
	}
	rec.prev.seq, rec.prev.rtt, rec.prev.up, rec.prev.down = seq, rtt, up, down
	return rtt
}

// summarize declares what is still in flight lost, settles the direction
// of every loss, reports the last intervals, the last ending at end (when
// sending ended), and fills in the summary and the workload's results.
func (rec *recorder) summarize(end int64) {
	rec.loseInFlight()
	if rec.log != nil {
		if rec.stamps != nil {
			rec.flushLog(0) // lines still waiting for a T3k
		}
		rec.log.flush() // complete, also when the run was interrupted
	}
	lost := rec.lostSoFar()
	u := rec.lostUp(true)
	if len(rec.segs) > 1 && rec.res.ReflectorCount == "close" {
		rec.res.ReflectorCount = "partial"
	}
	// The last interval ends where sending ended, as the summary does (it
	// is about the probes sent in it, and its rates are over its span),
	// not when the wind-down did; every probe is accounted for.
	last := rec.ivs[len(rec.ivs)-1]
	last.end = max(end, last.acc.start)
	rec.settle(true)
	sum := rec.total.interval(rec.origin, end, rec.cfg.Percentiles)
	sum.Start = 0
	sum.Counts.LostUp, sum.Counts.LostDown = u, lost-u
	if rec.noDirections {
		unsplit(&sum.Counts)
	}
	sum.Counts.InFlight = 0 // the intervals' in flight came or were lost since
	if rec.tcp != nil {
		sum.TCP = rec.tcpInterval(true)
	}
	rec.res.Summary = sum
	if rec.entries != nil {
		rec.res.Workload = workloadResults(rec.cfg, rec.entries)
	}
}

// countErrors counts n messages that could not be sent or read, or made
// no sense, in the current interval.
func (rec *recorder) countErrors(n uint64) { rec.cur.counts.Errors += n }

// countReconnect counts a new session taking over, in the current
// interval.
func (rec *recorder) countReconnect() { rec.cur.counts.Reconnects++ }

// measured reports whether seq is part of the results (not warm-up).
func (rec *recorder) measured(seq uint64) bool { return !rec.warm && seq > rec.warmupLast }

func (rec *recorder) lostSoFar() uint64 { return rec.lostN }

// sentSoFar returns the measured probes sent: those of the intervals
// reported, and of those still pending (the current one among them).
func (rec *recorder) sentSoFar() uint64 {
	n := rec.total.counts.Sent
	for _, p := range rec.ivs {
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

// wire is the bytes a message of n bytes took on the wire: n, or the
// foreign peer's packet size (Config.WireSize).
func (rec *recorder) wire(n int) uint64 {
	if rec.cfg.WireSize > 0 {
		return uint64(rec.cfg.WireSize)
	}
	return uint64(n)
}
