package client

import "github.com/volley-net/volley/internal/workload"

// closedLoop is the pacing of a closed-loop run's sender, beyond its window:
// workload gaps and bursts.
type closedLoop struct {
	picker     *workload.Picker // draws each probe's workload entry; nil without a workload
	nextSendAt int64            // when the next probe may leave (workload gaps)
	burstSent  int              // probes sent in this period's burst
	periodEnd  int64
}
