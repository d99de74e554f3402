package reflector

import (
	"time"

	"github.com/volley-net/volley/internal/stats"
)

// The counters the reflector reports, and the reasons it drops messages.

// DropReason says why a message was dropped.
type DropReason int

// The reasons a message is dropped.
const (
	DropShort       DropReason = iota // shorter than the header
	DropMagic                         // not a volley message
	DropVersion                       // a version this reflector does not speak
	DropType                          // unknown type, or a type only reflectors send
	DropToken                         // no session and not a valid cookie
	DropAddress                       // a session's token from another address
	DropClosed                        // a probe after its session was closed
	DropOversize                      // larger than MaxMessage
	DropRate                          // above the session's rate limit
	DropHoldFull                      // too many replies already held
	DropAuth                          // missing or wrong authentication tag
	DropRefused                       // from an address --allow does not cover
	DropSessions                      // a new session beyond MaxSessions
	DropDuration                      // a probe after its session's longest duration
	DropReplayed                      // a probe older than its session's replay window, or a keyed session's copy
	DropSlowReader                    // a reply to a stream peer whose earlier replies wait unread
	DropMemory                        // a reply or session the memory budget cannot hold
	DropConns                         // a stream connection beyond the most, in all or from its source
	DropLoadOff                       // a load request to a reflector that serves no load (refused: ErrorLoad)
	DropLoadStreams                   // a load stream beyond the most, in all or from its source (refused: ErrorLoadStreams)
	DropLoadStalled                   // a load stream cut for no progress within the send timeout
	NumDropReasons
)

var dropNames = [NumDropReasons]string{"short", "magic", "version", "type", "token", "address", "closed", "oversize", "rate", "hold-full", "auth", "refused", "sessions", "duration", "replayed", "slow-reader", "memory", "conns",
	"load-off", "load-streams", "load-stalled"}

// String returns the reason's short name, as printed in reports.
func (r DropReason) String() string {
	if r >= 0 && r < NumDropReasons {
		return dropNames[r]
	}
	return "unknown"
}

// Counters are the reflector's counters, for one interval or since start
// (named apart from package stats, whose distributions they carry).
type Counters struct {
	Elapsed        time.Duration
	PacketsIn      uint64
	PacketsOut     uint64
	BytesIn        uint64
	BytesOut       uint64
	SendErrors     uint64
	OneWay         uint64 // one-way probes received (they get no reply)
	Duplicates     uint64 // probes seen before in their session (answered, not counted)
	Sessions       int    // sessions open at the end of the interval
	SessionsOpened uint64 // sessions opened in the interval
	Drops          [NumDropReasons]uint64
	// Response is the distribution of response times (T3−T2 less the
	// hold) of the replies sent, and ResponseKernel the same from kernel
	// stamps (nil without them).
	Response, ResponseKernel *stats.Dist
}

// Dropped returns the sum of all drops.
func (s Counters) Dropped() uint64 {
	var n uint64
	for _, d := range s.Drops {
		n += d
	}
	return n
}

// Add returns the sum of s and o, as for several workers; Elapsed is the
// longer of the two.
func (s Counters) Add(o Counters) Counters {
	d := s
	d.Elapsed = max(s.Elapsed, o.Elapsed)
	d.PacketsIn += o.PacketsIn
	d.PacketsOut += o.PacketsOut
	d.BytesIn += o.BytesIn
	d.BytesOut += o.BytesOut
	d.SendErrors += o.SendErrors
	d.OneWay += o.OneWay
	d.Duplicates += o.Duplicates
	d.Sessions += o.Sessions
	d.SessionsOpened += o.SessionsOpened
	for i := range d.Drops {
		d.Drops[i] += o.Drops[i]
	}
	d.Response = mergeDists(s.Response, o.Response)
	d.ResponseKernel = mergeDists(s.ResponseKernel, o.ResponseKernel)
	return d
}

// Own returns s with its own copies of the response distributions, which
// the reflector resets for its next interval: for an OnInterval that
// keeps them past its return.
func (s Counters) Own() Counters {
	s.Response, s.ResponseKernel = mergeDists(s.Response, nil), mergeDists(s.ResponseKernel, nil)
	return s
}

func (s Counters) sub(o Counters) Counters {
	d := s
	d.PacketsIn -= o.PacketsIn
	d.PacketsOut -= o.PacketsOut
	d.BytesIn -= o.BytesIn
	d.BytesOut -= o.BytesOut
	d.SendErrors -= o.SendErrors
	d.OneWay -= o.OneWay
	d.Duplicates -= o.Duplicates
	d.SessionsOpened -= o.SessionsOpened
	for i := range d.Drops {
		d.Drops[i] -= o.Drops[i]
	}
	return d
}

// Counters returns the counters since the reflector started.
func (r *Reflector) Counters() Counters {
	s := r.st
	s.Sessions = r.openSessions
	return s
}
