package reflector

import (
	"encoding/json"
	"net/netip"
	"time"

	"github.com/volley-net/volley/internal/stats"
	"github.com/volley-net/volley/internal/wire"
)

// seenWindow is how many recent sequence numbers a one-way session
// remembers to tell duplicates from reordered probes.
const seenWindow = 1 << 16

// oneway is a session's record of the one-way probes it received.
type oneway struct {
	delay     *stats.Dist
	received  uint64
	dups      uint64
	reordered uint64
	maxSeq    uint64
	seen      [seenWindow / 64]uint64 // bit seq%seenWindow: seen

	// The current report window (an interval, or --report-every probes).
	win OneWayReport
	// maxSeq at the start of the window, for its loss.
	winSeq uint64
}

// OneWayReport is what a reflector saw of one session's one-way probes in
// a report window, in dpong's terms.
type OneWayReport struct {
	Addr          netip.AddrPort
	Received      uint64
	Lost          uint64 // gaps in the sequence numbers of the window
	Min, Avg, Max time.Duration
	sum           int64
}

func newOneway() *oneway { return &oneway{delay: stats.NewDist()} }

// record counts probe seq received with one-way delay d.
func (o *oneway) record(seq uint64, d int64) {
	bit := &o.seen[(seq%seenWindow)/64]
	mask := uint64(1) << (seq % 64)
	switch {
	case seq+seenWindow <= o.maxSeq:
		// Too old to tell a duplicate from a very late probe.
		o.reordered++
	case seq <= o.maxSeq && *bit&mask != 0:
		o.dups++
		return
	case seq < o.maxSeq:
		o.reordered++
	default:
		// Forget what the window slides past.
		for s := o.maxSeq + 1; s < seq && s+seenWindow > seq; s++ {
			o.seen[(s%seenWindow)/64] &^= 1 << (s % 64)
		}
		if seq-o.maxSeq >= seenWindow {
			clear(o.seen[:])
		}
		o.maxSeq = seq
	}
	*bit |= mask
	o.received++
	o.delay.Record(d)
	w := &o.win
	if w.Received == 0 {
		w.Min, w.Max = time.Duration(d), time.Duration(d)
	}
	w.Received++
	w.Min = min(w.Min, time.Duration(d))
	w.Max = max(w.Max, time.Duration(d))
	w.sum += d
}

// report closes the current window and returns it.
func (o *oneway) report(addr netip.AddrPort) OneWayReport {
	w := o.win
	w.Addr = addr
	if span := o.maxSeq - o.winSeq; span > w.Received {
		w.Lost = span - w.Received
	}
	if w.Received > 0 {
		w.Avg = time.Duration(w.sum / int64(w.Received))
	}
	o.win = OneWayReport{}
	o.winSeq = o.maxSeq
	return w
}

// results encodes the session's totals for the CloseAck.
func (o *oneway) results() ([]byte, error) {
	snap, err := o.delay.Snapshot()
	if err != nil {
		return nil, err
	}
	d, err := json.Marshal(snap)
	if err != nil {
		return nil, err
	}
	return json.Marshal(wire.OneWayResults{Received: o.received, Duplicates: o.dups, Reordered: o.reordered, Delay: d})
}
