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
			floor := 1 << 12
			if cfg.Shared {
				floor = 1 << 10 // one of many: small
			}
			n = min(n, max(4*cfg.Window, floor, int(2*cfg.openLoopRate()*cfg.Timeout.Seconds())))
		}
	}
	return pow2(n)
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
	return pow2(min(most, max(1<<8, int(5*cfg.openLoopRate()*sharedDrainEvery.Seconds()))))
}

// openLoopRate is an open-loop run's probes per second: Rate, or what
// SendInterval makes.
func (c *Config) openLoopRate() float64 {
	if c.SendInterval > 0 {
		return 1e9 / float64(c.SendInterval)
	}
	return c.Rate
}

// pow2 is the smallest power of two of at least n (n > 0).
func pow2(n int) int { return 1 << bits.Len64(uint64(n)-1) }
