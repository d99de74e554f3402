package report

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/volley-net/volley/internal/stats"
)

// ReflectorCounts are a reflector's counters over Elapsed (one interval,
// or since it started), as the server's lines show them. The report
// package does not import the reflector's: its caller copies them here.
type ReflectorCounts struct {
	Elapsed                  time.Duration
	PacketsIn, PacketsOut    uint64
	BytesIn, BytesOut        uint64
	SendErrors               uint64
	Duplicates               uint64
	Sessions                 int    // open at the end
	SessionsOpened           uint64 // opened over Elapsed
	Drops                    []Drop // by reason, in the reflector's order
	Response, ResponseKernel *stats.Dist
}

// Drop is the count of messages dropped for one reason.
type Drop struct {
	Reason string // the reason's short name
	Count  uint64
}

// Dropped returns the sum of all drops.
func (c ReflectorCounts) Dropped() uint64 {
	var n uint64
	for _, d := range c.Drops {
		n += d.Count
	}
	return n
}

// ReflectorLine renders a reflector's counters as an interval line shows
// them: rates over c.Elapsed, sessions, drops by reason, response times.
func ReflectorLine(c ReflectorCounts) string {
	secs := c.Elapsed.Seconds()
	rate := func(n uint64) float64 {
		if secs <= 0 {
			return 0
		}
		return float64(n) / secs
	}
	var b strings.Builder
	fmt.Fprintf(&b, "in %s pkt/s %sbit/s, out %s pkt/s %sbit/s, sessions %d, %s",
		SI(rate(c.PacketsIn)), SI(8*rate(c.BytesIn)),
		SI(rate(c.PacketsOut)), SI(8*rate(c.BytesOut)), c.Sessions, dropsText(c))
	if d := c.Response; d != nil && d.Count() > 0 {
		l := d.Summary([]float64{50, 99})
		fmt.Fprintf(&b, ", response min %s avg %s p50 %s p99 %s max %s", Duration(l.Min), Duration(l.Mean),
			Duration(l.Percentiles[0].Value), Duration(l.Percentiles[1].Value), Duration(l.Max))
		if k := c.ResponseKernel; k != nil && k.Count() > 0 {
			l := k.Summary([]float64{50, 99})
			fmt.Fprintf(&b, " (kernel p50 %s p99 %s)", Duration(l.Percentiles[0].Value), Duration(l.Percentiles[1].Value))
		}
	}
	return b.String()
}

// dropsText renders the drop count with its reasons, and send errors.
func dropsText(c ReflectorCounts) string {
	var b strings.Builder
	fmt.Fprintf(&b, "dropped %d", c.Dropped())
	var reasons []string
	for _, d := range c.Drops {
		if d.Count > 0 {
			reasons = append(reasons, fmt.Sprintf("%s %d", d.Reason, d.Count))
		}
	}
	if len(reasons) > 0 {
		fmt.Fprintf(&b, " (%s)", strings.Join(reasons, ", "))
	}
	if c.Duplicates > 0 {
		fmt.Fprintf(&b, ", duplicates %d", c.Duplicates)
	}
	if c.SendErrors > 0 {
		fmt.Fprintf(&b, ", send errors %d", c.SendErrors)
	}
	return b.String()
}

// WriteReflectorTotals writes the lines a server ends with: its totals,
// and the distributions of its response times.
func WriteReflectorTotals(w io.Writer, total ReflectorCounts) error {
	var b strings.Builder
	fmt.Fprintf(&b, "--- totals over %s: in %d packets %sB, out %d packets %sB, sessions opened %d, %s\n",
		Duration(total.Elapsed), total.PacketsIn, SI(float64(total.BytesIn)),
		total.PacketsOut, SI(float64(total.BytesOut)), total.SessionsOpened, dropsText(total))
	for _, d := range []struct {
		name string
		dist *stats.Dist
	}{{"response", total.Response}, {"response (kernel stamps)", total.ResponseKernel}} {
		if d.dist != nil && d.dist.Count() > 0 {
			l := d.dist.Summary([]float64{50, 99, 99.9})
			fmt.Fprintf(&b, "--- %s over %d replies: min %s avg %s p50 %s p99 %s p99.9 %s max %s\n", d.name, l.Count,
				Duration(l.Min), Duration(l.Mean), Duration(l.Percentiles[0].Value),
				Duration(l.Percentiles[1].Value), Duration(l.Percentiles[2].Value), Duration(l.Max))
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// OneWayLine renders a reflector's report on a one-way session: what
// arrived from addr and its delays.
func OneWayLine(addr string, received, lost uint64, lmin, avg, lmax time.Duration) string {
	return fmt.Sprintf("one-way from %s: recv %d lost %d latency min %s avg %s max %s",
		addr, received, lost, Duration(lmin), Duration(avg), Duration(lmax))
}
