package client

import (
	"time"

	"github.com/volley-net/volley/internal/result"
	"github.com/volley-net/volley/internal/stats"
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

// workloadResults renders the per-entry results.
func workloadResults(cfg *Config, entries []*entryAcc) []result.WorkloadEntry {
	out := make([]result.WorkloadEntry, len(entries))
	for i, e := range entries {
		w := cfg.Workload[i]
		out[i] = result.WorkloadEntry{
			Name: w.Name, Weight: w.Weight, Size: w.Size, ReplySize: w.ReplySize,
			Hold: time.Duration(w.Hold), Gap: time.Duration(w.Gap),
			Sent: e.sent, Received: e.received, Lost: e.lost,
			RTT: e.rtt.Summary(cfg.Percentiles), Response: e.response.Summary(cfg.Percentiles),
		}
	}
	return out
}
