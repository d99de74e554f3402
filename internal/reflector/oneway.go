package reflector

import (
	"net/netip"
	"time"

	"github.com/volley-net/volley/internal/quota"
	"github.com/volley-net/volley/internal/stats"
	"github.com/volley-net/volley/internal/wire"
)

// oneway is a session's record of the one-way probes it received.
type oneway struct {
	delay     *stats.Dist
	ipdv      *stats.Dist // |delay − the previous probe's| when it was seq−1 (RFC 3393)
	prevSeq   uint64      // the last probe received, for IPDV
	prevDelay int64
	received  uint64
	dups      uint64
	reordered uint64
	seqs      seqWindow

	// The current report window (an interval, or --report-every probes).
	win OneWayReport
	// maxSeq at the start of the window, for its loss.
	winSeq uint64

	// The results, encoded once the session closed (they no longer
	// change): a Close repeated, by a client whose CloseAck was lost or
	// by a peer's flood, costs no encoding again.
	full, short []byte
}

// OneWayReport is what a reflector saw of one session's one-way probes in
// a report window, in dpong's terms.
type OneWayReport struct {
	Addr          netip.AddrPort
	Received      uint64
	Lost          uint64 // gaps in the sequence numbers of the window
	Min, Avg, Max time.Duration
	// Span is the time from the window's first probe to its last, as
	// received, for its throughput in messages/s (dpong's).
	Span        time.Duration
	sum         int64
	first, last int64
}

func newOneway() *oneway { return &oneway{delay: stats.NewDist().Signed(), ipdv: stats.NewDist()} }

// record counts probe seq received at t2 with one-way delay d.
func (o *oneway) record(seq uint64, t2, d int64) {
	dup, reordered := o.seqs.add(seq)
	if dup {
		o.dups++
		return
	}
	if reordered {
		o.reordered++
	}
	o.received++
	o.delay.Record(d)
	if o.prevSeq != 0 && seq == o.prevSeq+1 {
		o.ipdv.Record(max(d-o.prevDelay, o.prevDelay-d))
	}
	o.prevSeq, o.prevDelay = seq, d
	w := &o.win
	if w.Received == 0 {
		w.Min, w.Max = time.Duration(d), time.Duration(d)
		w.first = t2
	}
	w.last = t2
	w.Received++
	w.Min = min(w.Min, time.Duration(d))
	w.Max = max(w.Max, time.Duration(d))
	w.sum += d
}

// report closes the current window and returns it.
func (o *oneway) report(addr netip.AddrPort) OneWayReport {
	w := o.win
	w.Addr = addr
	if span := o.seqs.maxSeq - o.winSeq; span > w.Received {
		w.Lost = span - w.Received
	}
	if w.Received > 0 {
		w.Avg = time.Duration(w.sum / int64(w.Received))
		w.Span = time.Duration(w.last - w.first)
	}
	o.win = OneWayReport{}
	o.winSeq = o.seqs.maxSeq
	return w
}

// results encodes the session's totals for the CloseAck, in at most room
// bytes where it can: the IPDV is left out when it does not fit. It is
// called once the session is closed, and encodes only the first time.
func (o *oneway) results(room int) ([]byte, error) {
	if o.full == nil {
		full, short, err := o.encode()
		if err != nil {
			return nil, err
		}
		o.full, o.short = full, short
	}
	if len(o.full) <= room {
		return o.full, nil
	}
	return o.short, nil
}

// encode returns the session's results with the IPDV and without it.
func (o *oneway) encode() (full, short []byte, err error) {
	d, err := o.delay.Snapshot()
	if err != nil {
		return nil, nil, err
	}
	ipdv, err := o.ipdv.Snapshot()
	if err != nil {
		return nil, nil, err
	}
	res := wire.OneWayResults{Received: o.received, Duplicates: o.dups, Reordered: o.reordered,
		Delay: wire.Snapshot(d), IPDV: wire.Snapshot(ipdv), HasIPDV: true}
	if full, err = res.AppendBinary(nil); err != nil {
		return nil, nil, err
	}
	res.HasIPDV = false
	short, err = res.AppendBinary(nil)
	return full, short, err
}

// onewayCost is what a one-way session's histograms take of the memory
// budget: the delays' two (from zero up, and below zero: between two
// hosts' clocks) and the IPDV's, 3 x 216 KiB (TestOnewayCost).
const onewayCost = 672 << 10

// oneWay records a one-way probe of session s.
func (r *Reflector) oneWay(s *session, h *wire.Header, addr netip.AddrPort, t2 int64) {
	r.st.OneWay++
	if h.Flags&wire.FlagWarmup != 0 {
		return
	}
	if s.oneway == nil {
		if r.cfg.Memory.Take(s.src, onewayCost) != quota.OK {
			r.st.Drops[DropMemory]++
			return
		}
		s.oneway = newOneway()
	}
	s.oneway.record(h.Seq, t2, t2-h.T1)
	if r.cfg.ReportEvery > 0 && s.oneway.win.Received >= r.cfg.ReportEvery && r.cfg.OnOneWay != nil {
		r.cfg.OnOneWay(s.oneway.report(addr))
	}
}

// reportOneWay hands over each one-way session's interval.
func (r *Reflector) reportOneWay() {
	if r.cfg.OnOneWay == nil || r.cfg.ReportEvery > 0 {
		return
	}
	for _, s := range r.sessions {
		if s.oneway != nil && (s.oneway.win.Received > 0 || s.oneway.seqs.maxSeq > s.oneway.winSeq) {
			r.cfg.OnOneWay(s.oneway.report(s.addr))
		}
	}
}

// onewayDone reports whether the one-way session s received want
// measured probes (it may have more: copies too old to tell).
func (s *session) onewayDone(want uint64) bool {
	if s.oneway == nil {
		return want == 0
	}
	return s.oneway.received >= want
}
