package foreign

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync/atomic"
	"time"

	"github.com/volley-net/volley/internal/result"
	"github.com/volley-net/volley/internal/sockopt"
	"github.com/volley-net/volley/internal/transport"
)

// A Connect is a connection whose socket options can be read back.
var _ transport.SyscallConn = (*Connect)(nil)

// ConnectConfig is what a connect:// run needs.
type ConnectConfig struct {
	// Addr is the TCP service to time handshakes with.
	Addr netip.AddrPort
	// Local is the address each probe's socket binds to (--bind); the
	// zero value: any. With port 0 the kernel picks a port per probe.
	Local netip.AddrPort
	// Timeout is how long a handshake may take (the run's --timeout);
	// one not done by then is closed and counted TimedOut. 0:
	// DefaultConnectTimeout.
	Timeout time.Duration
	// Options are applied to every probe's socket (--tos, --ttl, ...).
	Options sockopt.Options
	// MaxOpen bounds the handshakes open at once (one socket each); a
	// probe past it fails. 0: DefaultMaxOpen.
	MaxOpen int
}

// DefaultConnectTimeout is a handshake's timeout when the config gives
// none: the client's default --timeout.
const DefaultConnectTimeout = time.Second

// DefaultMaxOpen is how many handshakes a Connect keeps open at most when
// the config does not say.
const DefaultMaxOpen = 4096

// ErrTooManyOpen is the error of a probe written while MaxOpen handshakes
// are open: nothing was sent.
var ErrTooManyOpen = errors.New("foreign: too many TCP handshakes open at once")

// ErrConnectNotProbe is the error of a write that is not a volley probe: a
// Connect turns probes into handshakes and nothing else.
var ErrConnectNotProbe = errors.New("foreign: connect:// sends probes only")

// connectNote is what a connect:// run's answers cannot tell.
const connectNote = "a TCP handshake is timed from connect() to the SYN-ACK; a refused or unanswered one is lost, counted apart"

// Connect times TCP handshakes with a service, one new connection per
// probe, as a volley connection (a client.Foreign): Write takes a volley
// probe and starts a handshake (a non-blocking connect); Read returns a
// volley reply to it, with the probe's Token, Seq and T1, once the
// handshake completed (the socket is then closed: the service sees a
// connection accepted and closed at once). A handshake refused (an RST),
// failed (an ICMP error, no local port) or not done within Timeout gets
// no reply and is counted in Peer's Connect counts; the client declares
// its probe lost.
//
// Write may run on one goroutine while Read runs on another (an
// open-loop run's sender and its loop); Peer may be called from any.
// Neither Write nor Read allocates.
type Connect struct {
	cfg    ConnectConfig
	remote connectAddr
	local  *net.TCPAddr
	epoch  time.Time // start of the monotonic time the handshakes are timed in

	refused, timedOut, failed atomic.Uint64

	sys connectSys // the platform's part
}

// NewConnect returns a Connect to cfg.Addr, or an error naming what in
// cfg is wrong or what the platform lacks (connect:// needs Linux).
func NewConnect(cfg ConnectConfig) (*Connect, error) {
	cfg.Addr = netip.AddrPortFrom(cfg.Addr.Addr().Unmap(), cfg.Addr.Port())
	if cfg.Local.Addr().IsValid() {
		cfg.Local = netip.AddrPortFrom(cfg.Local.Addr().Unmap(), cfg.Local.Port())
	}
	switch a, l := cfg.Addr.Addr(), cfg.Local.Addr(); {
	case !a.IsValid():
		return nil, errors.New("connect: no address to connect to")
	case cfg.Addr.Port() == 0:
		return nil, fmt.Errorf("connect: %s has no port (connect://HOST:PORT)", a)
	case a.IsUnspecified():
		return nil, fmt.Errorf("connect: %s is not an address to connect to", a)
	case l.IsValid() && l.Is4() != a.Is4():
		return nil, fmt.Errorf("connect: --bind %s and the target %s are of different IP versions", l, a)
	case cfg.Timeout < 0:
		return nil, fmt.Errorf("connect: timeout %s is negative", cfg.Timeout)
	case cfg.MaxOpen < 0:
		return nil, fmt.Errorf("connect: at most %d handshakes open: want 1 or more", cfg.MaxOpen)
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultConnectTimeout
	}
	if cfg.MaxOpen == 0 {
		cfg.MaxOpen = DefaultMaxOpen
	}
	c := &Connect{cfg: cfg, remote: connectAddr(cfg.Addr), epoch: time.Now()}
	c.local = &net.TCPAddr{IP: net.IP(cfg.Local.Addr().AsSlice()), Port: int(cfg.Local.Port()), Zone: cfg.Local.Addr().Zone()}
	if !cfg.Local.Addr().IsValid() {
		c.local.IP = net.IPv4zero
		if !cfg.Addr.Addr().Is4() {
			c.local.IP = net.IPv6unspecified
		}
	}
	if err := c.open(); err != nil {
		return nil, err
	}
	return c, nil
}

// now is the time since c's epoch, by the monotonic clock.
func (c *Connect) now() int64 { return int64(time.Since(c.epoch)) }

// LocalAddr is the address the probes' sockets bind to: --bind's, or the
// unspecified address (each probe has a port of its own).
func (c *Connect) LocalAddr() net.Addr { return c.local }

// RemoteAddr is the service's address. Its network is "connect": to the
// client not a stream (whose every error ends a run) nor a datagram
// socket (whose one-way close waits for reordered probes).
func (c *Connect) RemoteAddr() net.Addr { return c.remote }

// Answers counts the handshakes the service refused (client.Answerer): a
// service that refuses is there, and the run goes on.
func (c *Connect) Answers() uint64 { return c.refused.Load() }

// Peer says what a connect:// run measures: handshake times only.
func (c *Connect) Peer() *result.Peer { return &result.Peer{Protocol: "connect"} }

// PeerResults gives the counts of the handshakes that did not complete.
// The client reads it once, as the run ends: every handshake still open
// then is closed and counted timed out (the client counted it lost), so
// that refused, timed out and failed add up to the run's losses.
func (c *Connect) PeerResults() *result.PeerResults {
	c.giveUp()
	return &result.PeerResults{
		Note: connectNote,
		Connect: &result.ConnectPeer{
			Refused:  c.refused.Load(),
			TimedOut: c.timedOut.Load(),
			Failed:   c.failed.Load(),
		},
	}
}

// connectAddr is a connect:// target's address.
type connectAddr netip.AddrPort

// Network is "connect".
func (a connectAddr) Network() string { return "connect" }

// String is the address and port.
func (a connectAddr) String() string { return netip.AddrPort(a).String() }

// handshake is a handshake in flight: its socket and the probe it answers.
type handshake struct {
	fd    int
	gen   uint32 // which use of its slot this is
	live  bool
	token uint64
	seq   uint64
	t1    int64
	start int64 // when connect was called, on the Connect's clock
}

// handshakeRef names a use of a slot of a handshakeTable.
type handshakeRef struct{ idx, gen uint32 }

// handshakeTable holds the handshakes in flight: at most len(slots),
// each found again by its handshakeRef (the epoll event's data), and in
// order the order they started in, for expiry. A handshake that ends
// leaves its order entry behind, skipped when met; the order ring has
// room for twice as many entries as slots, and is compacted when full.
// Nothing in it allocates after newHandshakeTable.
type handshakeTable struct {
	slots      []handshake
	free       []uint32 // the free slots' indexes (a stack)
	order      []handshakeRef
	head, tail uint64 // order[tail%len : head%len] is in use
}

func newHandshakeTable(n int) *handshakeTable {
	t := &handshakeTable{slots: make([]handshake, n), free: make([]uint32, n), order: make([]handshakeRef, 2*n)}
	for i := range t.free {
		t.free[i] = uint32(n - 1 - i)
	}
	return t
}

// full reports whether every slot is in use.
func (t *handshakeTable) full() bool { return len(t.free) == 0 }

// open returns the number of handshakes in the table.
func (t *handshakeTable) open() int { return len(t.slots) - len(t.free) }

// add puts h in a free slot and returns its reference; ok is false when
// the handshakeTable is full.
func (t *handshakeTable) add(h handshake) (ref handshakeRef, ok bool) {
	if t.full() {
		return handshakeRef{}, false
	}
	if t.head-t.tail == uint64(len(t.order)) {
		t.compact()
	}
	idx := t.free[len(t.free)-1]
	t.free = t.free[:len(t.free)-1]
	s := &t.slots[idx]
	h.gen, h.live = s.gen+1, true
	*s = h
	ref = handshakeRef{idx, h.gen}
	t.order[t.head%uint64(len(t.order))] = ref
	t.head++
	return ref, true
}

// take removes the handshake ref names and returns it; ok is false when
// it is no longer there (it timed out, or the handshakeTable was emptied).
func (t *handshakeTable) take(ref handshakeRef) (h handshake, ok bool) {
	if int(ref.idx) >= len(t.slots) {
		return handshake{}, false
	}
	s := &t.slots[ref.idx]
	if !s.live || s.gen != ref.gen {
		return handshake{}, false
	}
	h = *s
	s.live = false
	t.free = append(t.free, ref.idx)
	return h, true
}

// current reports whether ref names a handshake still in the table.
func (t *handshakeTable) current(ref handshakeRef) bool {
	s := &t.slots[ref.idx]
	return s.live && s.gen == ref.gen
}

// expired removes and returns the oldest handshake started timeout or
// more before now; ok is false when there is none.
func (t *handshakeTable) expired(now, timeout int64) (h handshake, ok bool) {
	n := uint64(len(t.order))
	for t.tail < t.head {
		ref := t.order[t.tail%n]
		if !t.current(ref) {
			t.tail++
			continue
		}
		if now-t.slots[ref.idx].start < timeout {
			return handshake{}, false
		}
		t.tail++
		return t.take(ref)
	}
	return handshake{}, false
}

// compact drops the order entries of handshakes that ended.
func (t *handshakeTable) compact() {
	n := uint64(len(t.order))
	w := t.tail
	for r := t.tail; r < t.head; r++ {
		if ref := t.order[r%n]; t.current(ref) {
			t.order[w%n] = ref
			w++
		}
	}
	t.head = w
}

// drain removes and returns any handshake in the handshakeTable; ok is false when
// it is empty.
func (t *handshakeTable) drain() (h handshake, ok bool) {
	for t.tail < t.head {
		ref := t.order[t.tail%uint64(len(t.order))]
		t.tail++
		if h, ok := t.take(ref); ok {
			return h, true
		}
	}
	return handshake{}, false
}
