package stream

import (
	"encoding/binary"
	"errors"
	"net"
	"net/netip"
	"time"

	"github.com/volley-net/volley/internal/pace"
	"github.com/volley-net/volley/internal/quota"
)

// maxRefusing bounds the refused connections being told why at once; the
// rest are closed at once.
const maxRefusing = 64

func (l *Listener) accept() {
	for {
		c, err := l.ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			time.Sleep(10 * time.Millisecond) // out of descriptors: let some go
			continue
		}
		l.mu.Lock()
		addr := l.peerAddr(c)
		src := quota.Source(addr)
		if why := l.place(src); why != 0 {
			l.refuse(c, addr, why)
			l.mu.Unlock()
			continue
		}
		p := &peer{c: NewConn(c), addr: addr, src: src, free: make(chan struct{}), alarm: pace.NewAlarm(holdClock)}
		// Each connection's writer waits on its own alarm: one that spun
		// before each held reply would let a peer with many connections
		// keep every CPU spinning. The kernel sleep alone (timer slack
		// 1ns) ends within some tens of µs of the time.
		p.alarm.SpinFor = streamSpinFor
		p.since.Store(time.Now().UnixNano())
		p.counted.Store(true)
		if l.afterRead != nil {
			p.after = l.afterRead(c)
		}
		l.peers[p.addr] = p
		l.mu.Unlock()
		l.wg.Go(func() { l.read(p) })
	}
}

// place takes a place for a connection from src, making room at a cap by
// closing the connection that has waited longest without finishing its
// handshake (of src, at src's cap): a legitimate client's handshake takes
// a round trip, so idle or slow connections cannot keep it out. It
// returns why there is no place. l.mu is held.
func (l *Listener) place(src netip.Prefix) Refusal {
	for {
		switch l.conns.Take(src) {
		case quota.OK:
			return 0
		case quota.Total:
			if !l.evict(netip.Prefix{}, 0) {
				return RefusedConns
			}
		case quota.PerSource:
			// A source competing with itself (a client's -P flows all
			// connecting at once) spares its connections' first second.
			if !l.evict(src, evictAge) {
				return RefusedSourceConns
			}
		}
	}
}

// evictAge is how long a connection waits without a session before a
// newcomer of its own source may close it to make room: a client's
// handshake takes a round trip, so a sibling that came at the same moment
// is not taken for idle. At the total cap any source's oldest goes,
// however young: many sources may be refreshing their connections.
const evictAge = time.Second

// evict closes the connection of src (any, when src is not valid) that
// has waited longest, and at least age, without being admitted, and gives
// its place back at once. It reports whether it found one. l.mu is held.
func (l *Listener) evict(src netip.Prefix, age time.Duration) bool {
	var old *peer
	young := time.Now().Add(-age).UnixNano()
	for _, p := range l.peers {
		if !p.admitted.Load() && p.since.Load() <= young && (!src.IsValid() || p.src == src) && (old == nil || p.since.Load() < old.since.Load()) {
			old = p
		}
	}
	if old == nil {
		return false
	}
	delete(l.peers, old.addr)
	if old.counted.CompareAndSwap(true, false) {
		l.conns.Give(old.src)
	}
	old.c.Close() // its reader ends, and gives back the rest
	return true
}

// refuse tells the peer of c why it is refused: it reads the peer's first
// message (a Hello) and answers it as the Handler says, within a second.
// l.mu is held.
func (l *Listener) refuse(c net.Conn, addr netip.AddrPort, why Refusal) {
	h := l.handler.Load()
	if h == nil {
		c.Close()
		return
	}
	if len(l.refusing) >= maxRefusing {
		// Those that sent nothing yet make room: the newest is likelier
		// a client that will.
		var old net.Conn
		var at time.Time
		for rc, since := range l.refusing {
			if old == nil || since.Before(at) {
				old, at = rc, since
			}
		}
		delete(l.refusing, old)
		old.Close()
	}
	l.refusing[c] = time.Now()
	l.wg.Go(func() {
		defer func() {
			l.mu.Lock()
			delete(l.refusing, c)
			l.mu.Unlock()
			c.Close()
		}()
		if c.SetDeadline(time.Now().Add(time.Second)) != nil {
			return
		}
		fc := NewConn(c)
		buf, n, err := fc.ReadFrame(nil, l.lim.HandshakeMessage, func(buf []byte, size int) ([]byte, error) {
			return append(buf, make([]byte, size-len(buf))...), nil // within HandshakeMessage
		})
		if err != nil {
			return
		}
		if reply := (*h).Refuse(buf[headerLen:headerLen+n], addr, why); reply != nil {
			_, _ = fc.Write(reply)
		}
	})
}

// peerAddr names c: its TCP address, or one standing for a Unix
// connection, fd76:6c00:UUUU:UUUU::N with the peer's user ID U (so that
// its /64 is its source) and a number N of the listener's. l.mu is held.
func (l *Listener) peerAddr(c net.Conn) netip.AddrPort {
	if ta, ok := c.RemoteAddr().(*net.TCPAddr); ok {
		return ta.AddrPort()
	}
	l.nextID++
	var a [16]byte
	a[0], a[1], a[2] = 0xfd, 0x76, 0x6c // fd76:6c00::/32, "vl"
	binary.BigEndian.PutUint32(a[4:], peerUID(c))
	binary.BigEndian.PutUint64(a[8:], l.nextID)
	return netip.AddrPortFrom(netip.AddrFrom16(a), 0)
}
