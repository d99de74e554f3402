package client

import (
	"time"

	"github.com/volley-net/volley/internal/result"
	"github.com/volley-net/volley/internal/transport"
	"github.com/volley-net/volley/internal/wire"
)

// Path marking: what the probes' and replies' IP headers said on the way.

// Directions of a pathRecorder.
const (
	pathUp   = 0 // the probes, as the reflector saw them (the replies' FlagPath bytes)
	pathDown = 1 // the replies, as the client's socket saw them
)

// pathRecorder records, per direction, the first marks seen (TTL or hop
// limit, DSCP, ECN), the last, and each change as an event, up to
// result.MaxPathEvents kept (the rest counted). It holds everything in
// place: recording a packet neither allocates nor locks (the receiver
// alone records).
type pathRecorder struct {
	dirs    [2]pathDir
	events  [result.MaxPathEvents]result.PathEvent
	nEvents int
	notKept uint64
	// downNote says why the replies' headers are not read ("": they are).
	downNote string
}

// pathDir is one direction's record.
type pathDir struct {
	n           uint64
	first, last pathMark
	changes, ce uint64
}

// pathMark is an IP header's TTL and traffic class byte.
type pathMark struct{ ttl, tclass uint8 }

// ecnCE is the ECN code point CE, in a traffic class byte's lower bits.
const ecnCE = result.CE

// see records a packet of direction dir whose header said ttl and
// tclass: the probe seq's (up) or its reply's (down), at at since the
// measurement began.
func (p *pathRecorder) see(dir int, ttl, tclass uint8, at time.Duration, seq uint64) {
	d := &p.dirs[dir]
	m := pathMark{ttl, tclass}
	if tclass&3 == ecnCE {
		d.ce++
	}
	d.n++
	if d.n == 1 {
		d.first, d.last = m, m
		return
	}
	switch {
	case m.tclass&3 == ecnCE:
		// A CE mark is congestion on the way, counted, not a change
		// of the marking: the ECN before it stays.
		m.tclass = m.tclass&^3 | d.last.tclass&3
	case d.last.tclass&3 == ecnCE:
		// The first packet's CE hid the ECN it was sent with: the
		// first without it shows it.
		d.last.tclass = d.last.tclass&^3 | m.tclass&3
	}
	if m == d.last {
		return
	}
	d.changes++
	if p.nEvents == len(p.events) {
		p.notKept++
	} else {
		p.events[p.nEvents] = result.PathEvent{At: at, Seq: seq, Direction: dirName(dir),
			From: result.MarkOf(d.last.ttl, d.last.tclass), To: result.MarkOf(m.ttl, m.tclass)}
		p.nEvents++
	}
	d.last = m
}

// dirName names a direction.
func dirName(dir int) string {
	if dir == pathUp {
		return "up"
	}
	return "down"
}

// result returns what p recorded, given what the client's socket sent
// (its TTL and traffic class byte, as the kernel applied them); nil when
// neither direction told anything.
func (p *pathRecorder) result(sentTTL, sentTClass int) *result.Path {
	if p.dirs[pathUp].n == 0 && p.dirs[pathDown].n == 0 {
		return nil
	}
	res := &result.Path{
		Sent:          result.MarkOf(uint8(sentTTL), uint8(sentTClass)),
		Up:            p.dirs[pathUp].result(sentTTL, false),
		Down:          p.dirs[pathDown].result(0, true),
		EventsNotKept: p.notKept,
		DownNote:      p.downNote,
	}
	if res.Up.Packets == 0 {
		res.UpNote = "the reflector did not say (a volley reflector from before path marking, or one whose socket busy-polls without kernel stamps)"
	}
	if p.nEvents > 0 {
		res.Events = append([]result.PathEvent(nil), p.events[:p.nEvents]...)
	}
	return res
}

// result returns d's record; initial is the TTL its packets left with,
// or, when infer is set, inferred from the first TTL seen.
func (d *pathDir) result(initial int, infer bool) result.PathDirection {
	if d.n == 0 {
		return result.PathDirection{}
	}
	first := result.MarkOf(d.first.ttl, d.first.tclass)
	if infer {
		initial = result.InferInitialTTL(first.TTL)
	}
	return result.PathDirection{Packets: d.n, First: first, Last: result.MarkOf(d.last.ttl, d.last.tclass),
		InitialTTL: initial, InitialInferred: infer, Hops: initial - first.TTL, Changes: d.changes, CE: d.ce}
}

// setupPath has the probes ask the reflector what their IP headers said
// (see wire.FlagPath): UDP to a volley reflector, with replies; it costs
// the reflector nothing measurable. The client's socket reads its
// replies' headers where that costs nothing either: where the run reads
// batches anyway (several probes in flight, or kernel stamps), but not on
// a socket that busy-polls without stamps, whose spin would give up its
// lightest receive call for one that brings control messages. In
// ping-pong with user-space times the replies are read one at a time,
// the cheapest read (recvmmsg for the header cost 3 to 6 µs of a 30 µs
// loopback round trip), and the down direction goes unread.
func (r *run) setupPath() {
	if r.cfg.NoPath || r.cfg.OneWay {
		return
	}
	if _, ok := r.conn.(Foreign); ok {
		return
	}
	pr, ok := r.conn.(transport.PathReader)
	if !ok {
		return
	}
	r.path, r.pathFlag = new(pathRecorder), wire.FlagPath
	bp, _ := r.conn.(transport.BusyPolled)
	busy := bp != nil && bp.BusyPolling()
	_, batches := r.conn.(transport.BatchConn)
	switch {
	case !batches || !r.readsBatches():
		r.path.downNote = "the client reads its replies one at a time in ping-pong with user-space times (the cheapest read, which brings no header; --timestamps kernel or --window 2 reads them)"
	case busy && r.stamps == nil:
		r.path.downNote = "the client's socket busy-polls without kernel stamps (its spin's lightest read brings no header)"
	case pr.EnablePath() != nil:
		r.path.downNote = "the client's socket cannot read its replies' headers"
	}
}

// seePath records what the reply h to a measured probe, received at now,
// says of the probe's path, and what its own header said, p.
func (r *run) seePath(h *wire.Header, p transport.Path, now int64) {
	if r.path == nil || h.Seq > r.seq || !r.measured(h.Seq) {
		return
	}
	at, seq := time.Duration(now-r.origin), h.Seq-r.warmupLast
	// A reflector from before FlagPath sends the probe's flags back as
	// they came, with bytes 6 and 7 zero; a packet that arrived had a TTL
	// of at least 1, so TTL 0 is a reflector that did not say.
	if h.Flags&wire.FlagPath != 0 && h.TTL != 0 {
		r.path.see(pathUp, h.TTL, h.TClass, at, seq)
	}
	if p.OK {
		r.path.see(pathDown, p.TTL, p.TClass, at, seq)
	}
}

// finishPath puts what the run's path recorder recorded into its result.
func (r *run) finishPath() {
	if r.path == nil || r.res == nil {
		return
	}
	g, err := transport.Granted(r.conn)
	if err != nil {
		return
	}
	r.res.Path = r.path.result(g.TTL, g.TOS)
}
