package client

import (
	"fmt"

	"github.com/volley-net/volley/internal/result"
	"github.com/volley-net/volley/internal/stats"
)

// A one-way run (Config.OneWay) sends probes the reflector does not
// answer: the sender counts them, the recorder tracks none, and the
// reflector's results come back with its CloseAck (see closeTry).

// finishOneWay fills the summary of a one-way run from the reflector's
// results: what arrived, and its one-way delays.
func (r *run) finishOneWay() error {
	if r.oneway == nil {
		return fmt.Errorf("%w from %s", ErrNoResults, r.peer)
	}
	d, err := stats.FromSnapshot(stats.Snapshot(r.oneway.Delay))
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
	if r.oneway.HasIPDV {
		// A reflector whose CloseAck had no room for it leaves it out:
		// the run goes without.
		if ipdv, err := stats.FromSnapshot(stats.Snapshot(r.oneway.IPDV)); err == nil {
			sum.IPDV.Up = ipdv.Summary(r.cfg.Percentiles)
			r.total.d[distIPDVUp] = ipdv
		}
	}
	// Measured on one clock; between two, the up delays include an
	// offset that nothing came back down to estimate.
	r.res.ClockOffset = clockOffset(&r.offset, r.sameClock, sum.Up, result.Latency{})
	// Nothing came back down: what the reflector received is Received.
	sum.Throughput.ProbesPerSecDown, sum.Throughput.RequestsPerSec = 0, 0
	r.res.Histogram = histogram(&r.cfg, r.total)
	r.res.Distribution = distribution(&r.cfg, r.total)
	return nil
}
