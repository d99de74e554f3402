package client

import "math/bits"

// The sizes of a run's rings: the probes whose fate it remembers, and the
// open-loop sender's queue to the receiver.

// historySize is the number of probes whose fate the client remembers, a
// power of two: enough to tell late replies and duplicates apart for a
// timeout's worth of probes at high rates. A probe still unanswered when
// that many newer probes have been sent is declared lost at once.
func historySize(cfg Config) int {
	n := cfg.history
	if n == 0 {
		n = max(4*cfg.Window, 1<<17)
		if cfg.openLoop() {
			// A known rate: two timeouts' worth of probes is enough, and
			// keeps a slow flow small (many of them run with -P).
			rate := cfg.Rate
			if cfg.SendInterval > 0 {
				rate = 1e9 / float64(cfg.SendInterval)
			}
			floor := 1 << 12
			if cfg.Shared {
				floor = 1 << 10 // one of many: small
			}
			n = min(n, max(4*cfg.Window, floor, int(2*rate*cfg.Timeout.Seconds())))
		}
	}
	return 1 << bits.Len64(uint64(n)-1)
}

// sentQueueSize is how many probes the sender may hand over before the
// receiver takes them in: 65536, or, for a run that shares its process
// (whose receiver wakes only every sharedDrainEvery), five of those
// wakes' worth at its rate, at least 256: a hundred monitored targets
// must not hold 3.5 MB of queue each.
func sentQueueSize(cfg *Config) int {
	const most = 1 << 16
	if !cfg.Shared || cfg.Unpaced {
		return most
	}
	rate := cfg.Rate
	if cfg.SendInterval > 0 {
		rate = 1e9 / float64(cfg.SendInterval)
	}
	n := min(most, max(1<<8, int(5*rate*sharedDrainEvery.Seconds())))
	return 1 << bits.Len64(uint64(n)-1)
}
