package load

import (
	"sync"
	"time"
)

// bucket paces what a reflector sends over all its download streams: a
// token bucket of bytes that goes into debt, so that each stream reserves
// its next chunk and waits its turn (the streams share the rate in the
// order they ask, chunk by chunk). It is safe for concurrent use.
type bucket struct {
	mu     sync.Mutex
	rate   float64 // bytes/s; 0: no limit
	burst  float64 // the most tokens it holds
	tokens float64 // may be negative: chunks reserved ahead
	last   int64   // when it was last refilled (Unix ns; 0: never)
}

// newBucket returns a full bucket of rate bytes/s (0: no limit) that holds
// burst bytes.
func newBucket(rate, burst float64) *bucket {
	return &bucket{rate: rate, burst: burst, tokens: burst}
}

// reserve takes n bytes' tokens at now (Unix ns), going into debt when
// there are not enough, and returns how long the caller must wait before
// sending them: the time the rate takes to pay the debt back.
func (b *bucket) reserve(n int, now int64) time.Duration {
	if b.rate <= 0 {
		return 0
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.last != 0 && now > b.last {
		b.tokens = min(b.burst, b.tokens+float64(now-b.last)*b.rate/1e9)
	}
	if now > b.last {
		b.last = now // callers' clocks may be read out of order
	}
	b.tokens -= float64(n)
	if b.tokens >= 0 {
		return 0
	}
	// At most maxWait, which no stream outlives: a debt at a tiny rate
	// would overflow a Duration into a wait in the past.
	return time.Duration(min(-b.tokens/b.rate*1e9, float64(maxWait)))
}

// maxWait bounds reserve's waits: no stream lasts longer.
const maxWait = MaxDuration

// give returns n bytes' tokens that a caller reserved and will not send.
func (b *bucket) give(n int) {
	if b.rate <= 0 {
		return
	}
	b.mu.Lock()
	b.tokens = min(b.burst, b.tokens+float64(n))
	b.mu.Unlock()
}

// chunkFor returns the most bytes a download stream writes at once under
// a cap of rate bytes/s (0: none): a hundredth of a second's worth,
// between minChunk and maxChunk, so that many streams share a slow cap
// without each waiting long.
func chunkFor(rate float64) int {
	if rate <= 0 {
		return maxChunk
	}
	return int(min(max(rate/100, minChunk), maxChunk))
}

// The bounds of a download stream's writes.
const (
	minChunk = 1 << 10
	maxChunk = 64 << 10
)
