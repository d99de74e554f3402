package report

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/volley-net/volley/internal/result"
)

// dping and dpong's line formats (--format dping), latencies in whole
// microseconds, so that scripts written for them keep working:
//
//	MESSAGES recv 1000 lost 0 LATENCY min 113952 avg 191407 max 262817 THROUGHPUT 1296.6 m/s
//
// and for round trips three blocks: the way there, the way back and the
// whole round trip.

func micros(d time.Duration) int64 { return int64(d / time.Microsecond) }

// DpingMessages renders a MESSAGES line: span is the time the messages
// took, for the throughput.
func DpingMessages(recv, lost uint64, lmin, avg, lmax, span time.Duration) string {
	tput := 0.0
	if span > 0 {
		tput = float64(recv) / span.Seconds()
	}
	return fmt.Sprintf("MESSAGES recv %d lost %d LATENCY min %d avg %d max %d THROUGHPUT %.1f m/s",
		recv, lost, micros(lmin), micros(avg), micros(lmax), tput)
}

// WriteDping writes res as dping does at the end of a run: the timestamp
// line, then for a one-way run the reflector's MESSAGES line, and for a
// round-trip run the statistics of each way and of the whole round trip.
func WriteDping(w io.Writer, res *result.Result) error {
	var b strings.Builder
	fmt.Fprintf(&b, "Timestamp: %d microseconds\n", res.Start.UnixMicro())
	s := res.Summary
	span := s.End - s.Start
	if res.Config.OneWay {
		// The reflector's figures: what arrived, and its one-way delays.
		b.WriteString(DpingMessages(s.Counts.Received, s.Counts.Lost, s.Up.Min, s.Up.Mean, s.Up.Max, span) + "\n")
	} else {
		fmt.Fprintf(&b, "Dping->dpong statistics: LATENCY min %d avg %d max %d\n", micros(s.Up.Min), micros(s.Up.Mean), micros(s.Up.Max))
		fmt.Fprintf(&b, "dping<-dpong statistics: LATENCY min %d avg %d max %d\n", micros(s.Down.Min), micros(s.Down.Mean), micros(s.Down.Max))
		b.WriteString("Statistics for the whole roundtrip:\n")
		b.WriteString(DpingMessages(s.Counts.Received, s.Counts.Lost, s.RTT.Min, s.RTT.Mean, s.RTT.Max, span) + "\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}
