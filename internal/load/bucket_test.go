package load

import (
	"testing"
	"time"
)

// TestBucketCap drives streams sharing a bucket on a simulated clock:
// each reserves its next chunk, waits what reserve says and sends. The
// bytes sent by any moment never exceed the burst and the rate over the
// time gone by, and the streams are never idle while the rate allows
// more: exact counts, no clock of the machine's.
func TestBucketCap(t *testing.T) {
	for _, tc := range []struct {
		name    string
		bits    float64
		streams int
	}{
		{"1G over 4 streams", 1e9, 4},
		{"100M over 64 streams", 100e6, 64},
		{"1M over 16 streams", 1e6, 16},
		{"8k over 2 streams", 8e3, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rate := tc.bits / 8
			chunk := chunkFor(rate)
			burst := max(rate/100, float64(chunk))
			b := newBucket(rate, burst)
			const t0 = int64(1_000_000_000_000)
			span := int64(10 * time.Second)
			if rate < 1e4 {
				span = int64(100 * time.Second)
			}
			next := make([]int64, tc.streams) // when each stream asks next
			for i := range next {
				next[i] = t0
			}
			var sent float64
			for {
				// The stream that asks first.
				i := 0
				for j := range next {
					if next[j] < next[i] {
						i = j
					}
				}
				now := next[i]
				if now >= t0+span {
					break
				}
				at := now + int64(b.reserve(chunk, now))
				sent += float64(chunk)
				if most := burst + rate*float64(at-t0)/1e9; sent > most+1 {
					t.Fatalf("%.0f bytes sent by %v, want at most %.0f (burst %.0f, %.0f B/s)",
						sent, time.Duration(at-t0), most, burst, rate)
				}
				next[i] = at
			}
			least := rate*float64(span)/1e9 - float64(tc.streams*chunk)
			if sent < least {
				t.Errorf("%.0f bytes sent in %v, want at least %.0f: the streams waited more than the rate asks",
					sent, time.Duration(span), least)
			}
		})
	}
}

// TestBucketGive: a chunk given back is sent by another at once.
func TestBucketGive(t *testing.T) {
	b := newBucket(1000, 1000)
	if w := b.reserve(1000, 1); w != 0 {
		t.Fatalf("reserve of a full bucket waits %v, want 0", w)
	}
	if w := b.reserve(500, 1); w != 500*time.Millisecond {
		t.Fatalf("reserve into debt waits %v, want 500ms", w)
	}
	b.give(500)
	if w := b.reserve(1, 1); w != time.Millisecond {
		t.Fatalf("after give, reserve waits %v, want 1ms", w)
	}
	if w := newBucket(0, 0).reserve(1<<30, 1); w != 0 {
		t.Fatalf("an unlimited bucket waits %v", w)
	}
}

// TestBucketTinyRate: at a rate so low that the wait overflows a
// Duration, reserve waits maxWait, never a time in the past.
func TestBucketTinyRate(t *testing.T) {
	b := newBucket(1e-8/8, minChunk)
	b.reserve(minChunk, 1)
	if w := b.reserve(minChunk, 1); w != maxWait {
		t.Fatalf("reserve at 1e-8 bit/s waits %v, want %v", w, maxWait)
	}
}

func TestChunkFor(t *testing.T) {
	for _, tc := range []struct {
		rate float64
		want int
	}{{0, maxChunk}, {1e9 / 8, maxChunk}, {1e6 / 8, 1250}, {100, minChunk}} {
		if got := chunkFor(tc.rate); got != tc.want {
			t.Errorf("chunkFor(%v) = %d, want %d", tc.rate, got, tc.want)
		}
	}
}
