package client

import (
	"time"

	"github.com/volley-net/volley/internal/result"
	"github.com/volley-net/volley/internal/tstamp"
	"github.com/volley-net/volley/internal/wire"
)

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
