package client

// A run's intervals. Each probe belongs to the interval it was sent in, and
// so do its fate and figures: its reply, or its loss, and the delays the
// reply gave, wherever in time they come. An interval is therefore
// reported once it is over and all its probes are answered or declared
// lost, which is at most Timeout after its end (a lost probe waits that
// long), and usually a round trip after it. Until then it is pending,
// with the intervals after it.
//
// What comes for a probe after its interval was reported (a late reply, a
// duplicate that straggles in, a kernel stamp that rides on a later reply)
// goes in the interval being filled when it comes. A run keeps at most
// pendingLimit intervals pending: past that (an interval much shorter than
// the timeout, and probes lost in every one), the oldest is reported with
// the probes still unaccounted for as in flight, and their fate counts in
// the summary only. Either way each interval adds up: sent = received +
// lost + in flight.

// maxPendingIntervals bounds the intervals a run keeps pending, whatever
// the timeout and the interval: each holds a full set of histograms.
const maxPendingIntervals = 8

// MaxWaitIntervals is the longest Timeout, in report intervals, whose
// probes' fates all land in their intervals: pendingLimit keeps this
// many intervals waiting for their probes, and three more for the
// current one and those closing. With a longer Timeout some intervals
// are reported with probes in flight (Counts.InFlight), and only the
// summary counts their fate: a consumer of intervals alone (volley
// monitor) must keep Timeout within it.
const MaxWaitIntervals = maxPendingIntervals - 3

// pending is an interval not reported yet.
type pending struct {
	acc *acc
	no  uint32 // its number, from 0 for the first measured one
	end int64  // 0 while it is the current interval
	// outstanding counts its probes neither answered nor lost yet; first
	// and last are its first and last probes' sequence numbers (0: none
	// yet).
	outstanding int
	first, last uint64
	// sMax is its highest probe answered, cAtSMax the reflector's count
	// in that reply and seg its segment: where the loss on the way up is
	// known to. sMin, cAtSMin and segMin are the same of its lowest
	// probe answered: where the loss up to the interval before it ends
	// is known to.
	sMax, cAtSMax uint64
	seg           int
	sMin, cAtSMin uint64
	segMin        int
}

// answered notes that probe seq of p, of segment seg, was answered with
// the reflector's count c.
func (p *pending) answered(seq, c uint64, seg int) {
	if seq > p.sMax {
		p.sMax, p.cAtSMax, p.seg = seq, c, seg
	}
	if p.sMin == 0 || seq < p.sMin {
		p.sMin, p.cAtSMin, p.segMin = seq, c, seg
	}
}

// pendingLimit is how many intervals cfg's run keeps pending: the current
// one, those that ended less than a timeout ago, and one for a late
// wake-up.
func pendingLimit(cfg *Config) int {
	if cfg.ReportInterval <= 0 {
		return 1
	}
	n := int(min(cfg.Timeout/cfg.ReportInterval, maxPendingIntervals)) + 3
	return min(n, maxPendingIntervals)
}

// openInterval starts a new current interval at start.
func (rec *recorder) openInterval(start int64) {
	var p *pending
	if n := len(rec.freeIvs); n > 0 {
		p, rec.freeIvs = rec.freeIvs[n-1], rec.freeIvs[:n-1]
		*p = pending{acc: p.acc}
	} else {
		p = &pending{acc: newAcc(rec.cfg.Shared)}
		if !rec.cfg.Endless {
			// The total keeps every distribution, but an endless run's
			// (volley monitor's) keeps counts alone.
			p.acc.teeInto(rec.total)
		}
		if rec.stamps != nil {
			p.acc.kernel()
		}
	}
	p.acc.reset(start)
	p.no = rec.ivNext
	rec.ivNext++
	rec.ivs = append(rec.ivs, p)
	rec.cur = p.acc
}

// closeCurrent ends the current interval at end, opens the next, and
// reports what can be.
func (rec *recorder) closeCurrent(end int64) {
	rec.ivs[len(rec.ivs)-1].end = end
	rec.openInterval(end)
	rec.settle(false)
}

// pendingOf returns the interval probe s was sent in, nil when it has
// been reported. s must be a measured probe's.
func (rec *recorder) pendingOf(s *slot) *pending {
	if len(rec.ivs) == 0 {
		return nil
	}
	if i := s.iv - rec.ivs[0].no; i < uint32(len(rec.ivs)) {
		return rec.ivs[i]
	}
	return nil
}

// fateOf returns where the fate of probe s goes: its interval, or, when
// that was reported with s in flight, the summary alone.
func (rec *recorder) fateOf(p *pending) *acc {
	if p != nil {
		return p.acc
	}
	return rec.total
}

// lineOf returns where an event about a probe of interval p goes: p, or,
// when p was reported, the interval being filled.
func (rec *recorder) lineOf(p *pending) *acc {
	if p != nil {
		return p.acc
	}
	return rec.cur
}

// resolved notes that a probe of p was answered or lost, and reports the
// intervals that are complete.
func (rec *recorder) resolved(p *pending) {
	p.outstanding--
	if p.outstanding == 0 && p.end != 0 && p == rec.ivs[0] {
		rec.settle(false)
	}
}

// settle reports, oldest first, the intervals that are over and have all
// their probes accounted for, and the oldest ones beyond pendingLimit as
// they are; with final (the run is over), all of them.
func (rec *recorder) settle(final bool) {
	for len(rec.ivs) > 0 {
		p := rec.ivs[0]
		if p.end == 0 || (p.outstanding > 0 && !final && len(rec.ivs) <= rec.pendLimit) {
			return
		}
		rec.report(p, final)
		rec.ivs[0] = nil
		rec.ivs = rec.ivs[1:]
		rec.freeIvs = append(rec.freeIvs, p)
	}
}

// report ends interval p: it settles the direction of its losses, hands
// it over and adds it to the total.
func (rec *recorder) report(p *pending, final bool) {
	a := p.acc
	a.counts.InFlight = uint64(p.outstanding)
	up := uint64(0)
	if u := rec.upThrough(p, final); u > rec.reportedU {
		up = min(u-rec.reportedU, a.counts.Lost)
	}
	rec.reportedU += up
	a.counts.LostUp, a.counts.LostDown = up, a.counts.Lost-up
	if rec.noDirections {
		unsplit(&a.counts)
	}
	if rec.cfg.ReportInterval > 0 {
		iv := a.interval(rec.origin, p.end, rec.cfg.Percentiles)
		if rec.tcp != nil {
			iv.TCP = rec.tcpInterval(false)
		}
		if !rec.cfg.StreamIntervals {
			rec.res.Intervals = append(rec.res.Intervals, iv)
		}
		rec.handler.Interval(iv)
		if rec.collect != nil {
			rec.collect(rec.intervals, a, iv.Start, iv.End)
		}
		rec.intervals++
	}
	if rec.cfg.Endless {
		rec.total.addCounts(a) // an endless run's total keeps counts alone
		return
	}
	// Its histograms' values went into the total's as they came
	// (teeInto): the rest of it follows.
	rec.total.mergeMoments(a)
}

// upThrough estimates the loss on the way up of the probes up to the last
// of interval p, the oldest pending, from the reflector's count in the
// reply to p's highest probe answered. The probes of p lost after that
// one take their share from the count in the next reply, to the lowest
// probe answered of the intervals after p, or from all the run knows
// (final: at its end): as many as were lost up between the two, so that
// it is exact unless the losses on both sides of p's end run together.
func (rec *recorder) upThrough(p *pending, final bool) uint64 {
	base, from := rec.reportedU, p.first
	if p.sMax != 0 {
		base, from = rec.upAt(p.seg, p.sMax, p.cAtSMax), p.sMax+1
	}
	if from == 0 {
		return base
	}
	tail := rec.lostAmong(from, p.last)
	if tail == 0 {
		return base
	}
	next := rec.lostUp(final)
	for _, q := range rec.ivs[1:] {
		if q.sMin != 0 {
			next = rec.upAt(q.segMin, q.sMin, q.cAtSMin)
			break
		}
	}
	if next > base {
		base += min(next-base, tail)
	}
	return base
}

// upAt is the loss on the way up of the measured probes up to seq, which
// is in segment seg and whose reply said the reflector had count of them.
func (rec *recorder) upAt(seg int, seq, count uint64) uint64 {
	var u uint64
	for j := range seg {
		u += rec.upEstimate(j, true)
	}
	if first, _ := rec.segSpan(seg); seq >= first {
		if sent := seq - first + 1; sent > count {
			u += min(sent-count, rec.segs[seg].lost)
		}
	}
	return u
}

// lostAmong counts the probes from first to last declared lost, of those
// the history still holds.
func (rec *recorder) lostAmong(first, last uint64) uint64 {
	var n uint64
	for seq := first; seq <= last && seq != 0; seq++ {
		if s := &rec.ring[seq&rec.mask]; s.seq == seq && (s.state == stateLost || s.state == stateLate) {
			n++
		}
	}
	return n
}
