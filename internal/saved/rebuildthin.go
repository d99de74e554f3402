package saved

import (
	"cmp"
	"slices"

	"github.com/volley-net/volley/internal/result"
)

// logIntervals is the most intervals a probe log's rebuild keeps
// (MaxIntervals; less in tests).
var logIntervals = MaxIntervals

// thinClosed merges the intervals rebuilt in pairs, in the order of their
// starts, once there are logIntervals of them, so that a log of many short
// intervals holds no more than a document does. A line that comes after
// its interval was rebuilt is still counted in it: in the merged one.
func (b *builder) thinClosed() {
	if len(b.ivs) < logIntervals {
		return
	}
	order := make([]int, len(b.ivs)) // the intervals' indices, by start
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(x, y int) int { return cmp.Compare(b.ivs[x].Start, b.ivs[y].Start) })
	at := make([]int, len(b.ivs)) // where each interval is merged
	merged := make([]result.Interval, 0, (len(order)+1)/2)
	for k, i := range order {
		if k%2 == 0 {
			merged = append(merged, b.ivs[i])
		} else {
			MergeInterval(&merged[k/2], b.ivs[i])
		}
		at[i] = k / 2
	}
	for n, i := range b.closed {
		b.closed[n] = at[i]
	}
	b.ivs = merged
	b.merged++
}
