package report

import (
	"fmt"
	"io"
	"time"

	"github.com/volley-net/volley/internal/ifstats"
)

// ReflectorIntervals writes a server's interval lines: the line of every
// interval in which something happened, and while nothing does, a line a
// minute (see intervalLines). With a network interface named, each line
// ends with the interface's packet rates over the time the line covers.
type ReflectorIntervals struct {
	w     io.Writer
	iface string
	lines intervalLines
	at    time.Duration // the end of the last interval, since the start
	// nicLast are the interface's counters at the last interval's end,
	// nicLine at the last line printed.
	nicLast, nicLine ifstats.Counters
}

// NewReflectorIntervals returns a ReflectorIntervals writing to w. iface
// names the network interface ("" for none), and nic are its counters at
// the start.
func NewReflectorIntervals(w io.Writer, iface string, nic ifstats.Counters) *ReflectorIntervals {
	return &ReflectorIntervals{w: w, iface: iface, nicLast: nic, nicLine: nic}
}

// Interval is given each interval's counters, in order, with the
// interface's counters at its end (nicOK false: none were read), and
// writes its line if it has one.
func (r *ReflectorIntervals) Interval(c ReflectorCounts, nic ifstats.Counters, nicOK bool) error {
	r.at += c.Elapsed // the interval's end
	var nicDropped uint64
	if nicOK {
		nicDropped = nic.Sub(r.nicLast).RXDropped
	}
	span, show := r.lines.take(c, nicDropped)
	base := r.nicLast
	if span > c.Elapsed {
		base = r.nicLine // an idle line: the quiet stretch
	}
	if nicOK {
		r.nicLast = nic
	}
	if !show {
		return nil
	}
	c.Elapsed = span // idle: no counts, over the stretch
	text := ""
	if nicOK {
		d, secs := nic.Sub(base), span.Seconds()
		text = fmt.Sprintf(", %s rx %s pkt/s tx %s pkt/s (rx dropped %d)", r.iface,
			SI(float64(d.RXPackets)/secs), SI(float64(d.TXPackets)/secs), d.RXDropped)
		r.nicLine = nic
	}
	_, err := fmt.Fprintf(r.w, "%.2f-%.2fs %s%s\n", (r.at - span).Seconds(), r.at.Seconds(), ReflectorLine(c), text)
	return err
}

// idleLineEvery is how often an idle server prints an interval line.
const idleLineEvery = time.Minute

// intervalLines decides which interval lines a server prints: the line of
// every interval in which something happened, and while nothing does, a
// line a minute that covers the quiet stretch, so that an idle server
// does not print "0 pkt/s" every second and still shows it is alive.
type intervalLines struct {
	sessions int           // open at the end of the last interval
	quiet    time.Duration // the quiet intervals since the last line
}

// take is given each interval's counters, in order, and the packets the
// network interface dropped in it (0 without --interface). It returns
// whether to print a line now, and the time the line covers, which ends
// with the interval: the interval's own length when something happened
// in it, the quiet stretch since the last line for an idle line.
func (q *intervalLines) take(c ReflectorCounts, nicDropped uint64) (span time.Duration, show bool) {
	happened := c.PacketsIn > 0 || c.PacketsOut > 0 || c.Dropped() > 0 || c.SendErrors > 0 ||
		c.SessionsOpened > 0 || c.Sessions != q.sessions || nicDropped > 0
	q.sessions = c.Sessions
	if happened {
		q.quiet = 0
		return c.Elapsed, true
	}
	q.quiet += c.Elapsed
	if q.quiet < idleLineEvery {
		return 0, false
	}
	span, q.quiet = q.quiet, 0
	return span, true
}
