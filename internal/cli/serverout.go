package cli

import (
	"fmt"
	"io"
	"sync"

	"github.com/volley-net/volley/internal/ifstats"
	"github.com/volley-net/volley/internal/reflector"
	"github.com/volley-net/volley/internal/report"
	"github.com/volley-net/volley/internal/server"
)

// reflectorCounts copies a reflector's counters into the report's form.
func reflectorCounts(s reflector.Counters) report.ReflectorCounts {
	drops := make([]report.Drop, len(s.Drops))
	for r, n := range s.Drops {
		drops[r] = report.Drop{Reason: reflector.DropReason(r).String(), Count: n}
	}
	return report.ReflectorCounts{Elapsed: s.Elapsed, PacketsIn: s.PacketsIn, PacketsOut: s.PacketsOut,
		BytesIn: s.BytesIn, BytesOut: s.BytesOut, SendErrors: s.SendErrors, Duplicates: s.Duplicates,
		Sessions: s.Sessions, SessionsOpened: s.SessionsOpened, Drops: drops,
		Response: s.Response, ResponseKernel: s.ResponseKernel}
}

// serverOut writes the server's lines to stdout as the workers tell them,
// from goroutines of their own, one at a time: the interval lines, the
// one-way reports, a listener lost, and the totals. It is the server's
// Handler.
type serverOut struct {
	mu    sync.Mutex
	w     io.Writer
	lines *report.ReflectorIntervals
}

// newServerOut returns a serverOut writing to w; iface is --interface
// ("" for none), and nic its counters at the start.
func newServerOut(w io.Writer, iface string, nic ifstats.Counters) *serverOut {
	return &serverOut{w: w, lines: report.NewReflectorIntervals(w, iface, nic)}
}

// Interval writes the interval's line, if it has one.
func (o *serverOut) Interval(iv server.Interval) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.lines.Interval(reflectorCounts(iv.Counts), iv.NIC, iv.NICOK)
	o.stampInterval(iv.STAMP)
}

// Lost says that a listener no longer answers.
func (o *serverOut) Lost(err error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	fmt.Fprintf(o.w, "volley: %v: no longer answering there\n", err)
}

// oneWay returns the reflectors' OnOneWay for --format: a line per
// report.
func (o *serverOut) oneWay(format string) func(reflector.OneWayReport) {
	return func(r reflector.OneWayReport) {
		var line string
		if format == "dping" {
			line = report.DpingMessages(r.Received, r.Lost, r.Min, r.Avg, r.Max, r.Span)
		} else {
			line = report.OneWayLine(r.Addr.String(), r.Received, r.Lost, r.Min, r.Avg, r.Max)
		}
		o.mu.Lock()
		defer o.mu.Unlock()
		fmt.Fprintf(o.w, "%s\n", line)
	}
}

// totals writes the lines the server ends with.
func (o *serverOut) totals(total reflector.Counters) {
	o.mu.Lock()
	defer o.mu.Unlock()
	report.WriteReflectorTotals(o.w, reflectorCounts(total))
}
