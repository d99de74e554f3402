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

// serverOut writes the server's lines to stdout, one at a time: the
// interval lines (from the server's emitter goroutine, which no worker
// waits on), the one-way reports and a listener lost (told by the
// workers, and written by a goroutine of serverOut's own, so that a
// stdout nobody reads stops no worker: past eventQueue lines waiting, the
// next are counted and not written), and the totals. It is the server's
// Handler.
type serverOut struct {
	mu    sync.Mutex // one line at a time on w
	w     io.Writer
	lines *report.ReflectorIntervals
	load  loadLines // the load streams' lines (none without --allow-load)

	evMu    sync.Mutex // guards closed, so that no event is sent after totals
	closed  bool
	events  chan string // lines for writeEvents
	dropped uint64      // lines events had no room for; under evMu
	done    chan struct{}
}

// eventQueue is how many one-way and lost-listener lines may wait for a
// stdout that is not read.
const eventQueue = 256

// newServerOut returns a serverOut writing to w; iface is --interface
// ("" for none), and nic its counters at the start.
func newServerOut(w io.Writer, iface string, nic ifstats.Counters) *serverOut {
	o := &serverOut{w: w, lines: report.NewReflectorIntervals(w, iface, nic),
		events: make(chan string, eventQueue), done: make(chan struct{})}
	go o.writeEvents()
	return o
}

// writeEvents writes the lines event hands over, until totals.
func (o *serverOut) writeEvents() {
	defer close(o.done)
	for line := range o.events {
		o.mu.Lock()
		io.WriteString(o.w, line)
		o.mu.Unlock()
	}
}

// event hands line to writeEvents without waiting: a worker tells it.
func (o *serverOut) event(line string) {
	o.evMu.Lock()
	defer o.evMu.Unlock()
	if o.closed {
		return
	}
	select {
	case o.events <- line:
	default:
		o.dropped++
	}
}

// Interval writes the interval's line, if it has one.
func (o *serverOut) Interval(iv server.Interval) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.lines.Interval(reflectorCounts(iv.Counts), iv.NIC, iv.NICOK)
	o.stampInterval(iv.STAMP)
	io.WriteString(o.w, o.load.interval(iv.Counts.Elapsed))
}

// Lost says that a listener no longer answers.
func (o *serverOut) Lost(err error) {
	o.event(fmt.Sprintf("volley: %v: no longer answering there\n", err))
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
		o.event(line + "\n")
	}
}

// totals writes the lines the server ends with, after the events still
// waiting, and says how many were not written.
func (o *serverOut) totals(total reflector.Counters) {
	o.evMu.Lock()
	o.closed = true
	dropped := o.dropped
	close(o.events)
	o.evMu.Unlock()
	<-o.done
	o.mu.Lock()
	defer o.mu.Unlock()
	if dropped > 0 {
		fmt.Fprintf(o.w, "volley: %d one-way report lines not written: stdout was not read\n", dropped)
	}
	report.WriteReflectorTotals(o.w, reflectorCounts(total))
	io.WriteString(o.w, o.load.totals())
}
