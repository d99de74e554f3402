package client

import (
	"time"

	"github.com/volley-net/volley/internal/result"
	"github.com/volley-net/volley/internal/stats"
	"github.com/volley-net/volley/internal/workload"
)

// entryAcc accumulates one workload entry over the whole run.
type entryAcc struct {
	sent, received, lost uint64
	rtt, response        *stats.Dist
}

func (e *entryAcc) merge(o *entryAcc) {
	e.sent += o.sent
	e.received += o.received
	e.lost += o.lost
	e.rtt.Merge(o.rtt)
	e.response.Merge(o.response)
}

// WorkloadMix is the workload's entries as configured, as a result
// describes them (what was measured of each left zero): what a report's
// header shows of the mix before the run.
func WorkloadMix(es []workload.Entry) []result.WorkloadEntry {
	mix := make([]result.WorkloadEntry, len(es))
	for i, w := range es {
		mix[i] = result.WorkloadEntry{Name: w.Name, Weight: w.Weight, Size: w.Size, ReplySize: w.ReplySize,
			Hold: time.Duration(w.Hold), Gap: time.Duration(w.Gap)}
	}
	return mix
}

// workloadResults renders the per-entry results.
func workloadResults(cfg *Config, entries []*entryAcc) []result.WorkloadEntry {
	out := WorkloadMix(cfg.Workload)
	for i, e := range entries {
		o := &out[i]
		o.Sent, o.Received, o.Lost = e.sent, e.received, e.lost
		o.RTT, o.Response = e.rtt.Summary(cfg.Percentiles), e.response.Summary(cfg.Percentiles)
	}
	return out
}
