// Package testconn is a fake client connection, for tests only: a
// transport.Conn wired straight to a reflector.Reflector in memory, with a
// one-way delay and rules that drop, duplicate and delay each direction's
// messages by sequence number, a reflector that can fall silent or
// restart, and a reflector clock shifted from the client's. It runs on
// timers, so a test drives it in a testing/synctest bubble, where the
// delays are exact.
//
// The client package's tests reach the reflector only through this
// package. Only tests import it.
package testconn

import (
	"net"
	"net/netip"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/volley-net/volley/internal/clock"
	"github.com/volley-net/volley/internal/deadline"
	"github.com/volley-net/volley/internal/reflector"
	"github.com/volley-net/volley/internal/transport"
	"github.com/volley-net/volley/internal/wire"
)

// Local and Remote are a Conn's addresses: the client's, and the
// reflector's.
var (
	Local  = &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 1111}
	Remote = &net.UDPAddr{IP: net.IPv4(127, 0, 0, 2), Port: 7766}
)

// client is Local as the reflector sees it.
var client = netip.MustParseAddrPort("127.0.0.1:1111")

// Reflector is what a test sets of the reflector behind a Conn; the rest
// is reflector.Config's defaults.
type Reflector struct {
	Clock       clock.Clock   // reflector.Config.Clock
	MaxDuration time.Duration // reflector.Config.MaxDuration
	MaxRate     float64       // reflector.Config.MaxRate
}

func (r Reflector) new(tb testing.TB) (*reflector.Reflector, error) {
	tb.Helper()
	return reflector.New(reflector.Config{Clock: r.Clock, MaxDuration: r.MaxDuration, MaxRate: r.MaxRate})
}

// Conn is a transport.Conn wired straight to a reflector. Set its fields
// before the client uses it.
type Conn struct {
	// Delay is each direction's one-way delay, unless DelayUpOf or
	// DelayDownOf say otherwise.
	Delay time.Duration
	// DelayUpOf, when set, is the way up's delay of each probe.
	DelayUpOf func(seq uint64) time.Duration
	// DelayDownOf, when set, is the way down's delay of each reply.
	DelayDownOf func(seq uint64) time.Duration
	// DropUp drops the probes it is true for before the reflector sees
	// them; DropDown the replies it is true for.
	DropUp   func(seq uint64) bool
	DropDown func(seq uint64) bool
	// DupUp: the reflector gets the probe twice (the copy 10µs later);
	// DupDown: the client gets the reply twice.
	DupUp   func(seq uint64) bool
	DupDown func(seq uint64) bool
	// Dead, while true, makes the reflector answer nothing: every
	// message written is lost.
	Dead func() bool
	// Shift puts the reflector's clock ahead of the client's by this.
	Shift time.Duration
	// StallRead, when set, is how long the nth Read (from 1) sleeps
	// before it reads: the client's process was stopped, or starved of
	// CPU, while it waited. A reply that came meanwhile is returned;
	// otherwise a deadline that passed expires the read at once.
	StallRead func(n uint64) time.Duration
	// ReadLimit, when not 0, fails every Read after that many with
	// net.ErrClosed: a loop that spins ends its test instead of hanging
	// it (in a synctest bubble, time stands still while code runs).
	ReadLimit uint64

	reads atomic.Uint64

	cfg Reflector

	mu   sync.Mutex // guards refl
	refl *reflector.Reflector
	read *deadline.Deadline
	in   chan []byte
}

var _ transport.Conn = (*Conn)(nil)

// New returns a Conn to a reflector with the default configuration.
func New(tb testing.TB) *Conn {
	tb.Helper()
	return NewWith(tb, Reflector{})
}

// NewWith returns a Conn to a reflector configured with r.
func NewWith(tb testing.TB, r Reflector) *Conn {
	tb.Helper()
	refl, err := r.new(tb)
	if err != nil {
		tb.Fatal(err)
	}
	return &Conn{cfg: r, refl: refl, read: deadline.New(), in: make(chan []byte, 1<<16)}
}

// Write hands b to the reflector after the way up's delay, unless a rule
// drops it, and its reply back after the way down's.
func (c *Conn) Write(b []byte) (int, error) {
	var h wire.Header
	if err := h.Decode(b); err != nil {
		return 0, err
	}
	if (c.Dead != nil && c.Dead()) || (h.Type == wire.TypeProbe && c.DropUp != nil && c.DropUp(h.Seq)) {
		return len(b), nil
	}
	pkt := make([]byte, len(b), 1<<16) // room for replies larger than the probe
	copy(pkt, b)
	up := c.Delay
	if c.DelayUpOf != nil && h.Type == wire.TypeProbe {
		up = c.DelayUpOf(h.Seq)
	}
	if h.Type == wire.TypeProbe && c.DupUp != nil && c.DupUp(h.Seq) {
		c.arrive(append(make([]byte, 0, 1<<16), pkt...), up+10*time.Microsecond)
	}
	c.arrive(pkt, up)
	return len(b), nil
}

// arrive hands pkt to the reflector after up, and its reply back.
func (c *Conn) arrive(pkt []byte, up time.Duration) {
	time.AfterFunc(up, func() {
		c.mu.Lock()
		reply := c.refl.Handle(pkt, client, time.Now().UnixNano()+int64(c.Shift))
		if due := c.refl.NextDue(); due != 0 && reply == nil {
			// A held reply: let the reflector send it when due.
			time.AfterFunc(time.Until(time.Unix(0, due)), c.due)
		}
		c.mu.Unlock()
		if reply != nil {
			c.answer(reply)
		}
	})
}

// due sends the held replies that are due.
func (c *Conn) due() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.refl.Due(time.Now().UnixNano(), func(b []byte, _ netip.AddrPort) {
		out := append([]byte(nil), b...)
		time.AfterFunc(c.Delay, func() { c.in <- out })
	})
}

// answer hands reply to the client after the way down's delay, unless a
// rule drops it.
func (c *Conn) answer(reply []byte) {
	var rh wire.Header
	_ = rh.Decode(reply)
	isReply := rh.Type == wire.TypeReply
	if isReply && c.DropDown != nil && c.DropDown(rh.Seq) {
		return
	}
	down := c.Delay
	if isReply && c.DelayDownOf != nil {
		down = c.DelayDownOf(rh.Seq)
	}
	copies := 1
	if isReply && c.DupDown != nil && c.DupDown(rh.Seq) {
		copies = 2
	}
	time.AfterFunc(down, func() {
		for range copies {
			c.in <- reply
		}
	})
}

// Read returns the next reply, or os.ErrDeadlineExceeded at the read
// deadline.
func (c *Conn) Read(b []byte) (int, error) {
	n := c.reads.Add(1)
	if c.ReadLimit > 0 && n > c.ReadLimit {
		return 0, net.ErrClosed
	}
	if c.StallRead != nil {
		if d := c.StallRead(n); d > 0 {
			time.Sleep(d)
			select {
			case p := <-c.in:
				return copy(b, p), nil
			default:
			}
		}
	}
	p, o := deadline.Wait(c.read, c.in, nil)
	if o != deadline.Ready {
		return 0, os.ErrDeadlineExceeded
	}
	return copy(b, p), nil
}

// SetReadDeadline sets the deadline of the Read in progress and those
// after it.
func (c *Conn) SetReadDeadline(t time.Time) error {
	c.read.Set(t)
	return nil
}

// Restart replaces the reflector with a new one, as a restarted process:
// it knows none of the old sessions. It may be called from any goroutine.
func (c *Conn) Restart(tb testing.TB) {
	r, err := c.cfg.new(tb)
	if err != nil {
		tb.Error(err)
		return
	}
	c.mu.Lock()
	c.refl = r
	c.mu.Unlock()
}

// LocalAddr returns Local.
func (c *Conn) LocalAddr() net.Addr { return Local }

// RemoteAddr returns Remote.
func (c *Conn) RemoteAddr() net.Addr { return Remote }

// Close does nothing.
func (c *Conn) Close() error { return nil }
