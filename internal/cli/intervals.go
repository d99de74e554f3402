package cli

import (
	"time"

	"github.com/volley-net/volley/internal/reflector"
)

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
func (q *intervalLines) take(s reflector.Counters, nicDropped uint64) (span time.Duration, show bool) {
	happened := s.PacketsIn > 0 || s.PacketsOut > 0 || s.Dropped() > 0 || s.SendErrors > 0 ||
		s.SessionsOpened > 0 || s.Sessions != q.sessions || nicDropped > 0
	q.sessions = s.Sessions
	if happened {
		q.quiet = 0
		return s.Elapsed, true
	}
	q.quiet += s.Elapsed
	if q.quiet < idleLineEvery {
		return 0, false
	}
	span, q.quiet = q.quiet, 0
	return span, true
}
