// Package reflector bounces volley probes back to their senders, stamping
// each with its receive and send times and the session's received count.
//
// A reflector keeps no state for a peer until the peer has echoed a cookie
// (see package wire), and until then never sends more bytes than it
// received: the Cookie answering a Hello is the 64-byte header, and a Hello
// is at least that. Replies to probes are the size of the probe.
package reflector

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"net"
	"net/netip"
	"os"
	"time"

	"github.com/volley-net/volley/internal/clock"
	"github.com/volley-net/volley/internal/transport"
	"github.com/volley-net/volley/internal/wire"
)

// MaxMessage is the largest message the reflector reads; a longer datagram
// is cut to this size and dropped as oversized.
const MaxMessage = 65535

// DropReason says why a message was dropped.
type DropReason int

// The reasons a message is dropped.
const (
	DropShort    DropReason = iota // shorter than the header
	DropMagic                      // not a volley message
	DropVersion                    // a version this reflector does not speak
	DropType                       // unknown type, or a type only reflectors send
	DropToken                      // no session and not a valid cookie
	DropAddress                    // a session's token from another address
	DropClosed                     // a probe after its session was closed
	DropOversize                   // larger than MaxMessage
	NumDropReasons
)

var dropNames = [NumDropReasons]string{"short", "magic", "version", "type", "token", "address", "closed", "oversize"}

// String returns the reason's short name, as printed in reports.
func (r DropReason) String() string {
	if r >= 0 && r < NumDropReasons {
		return dropNames[r]
	}
	return "unknown"
}

// Stats are the reflector's counters, for one interval or since start.
type Stats struct {
	Elapsed        time.Duration
	PacketsIn      uint64
	PacketsOut     uint64
	BytesIn        uint64
	BytesOut       uint64
	SendErrors     uint64
	Sessions       int    // sessions open at the end of the interval
	SessionsOpened uint64 // sessions opened in the interval
	Drops          [NumDropReasons]uint64
}

// Dropped returns the sum of all drops.
func (s Stats) Dropped() uint64 {
	var n uint64
	for _, d := range s.Drops {
		n += d
	}
	return n
}

func (s Stats) sub(o Stats) Stats {
	d := s
	d.PacketsIn -= o.PacketsIn
	d.PacketsOut -= o.PacketsOut
	d.BytesIn -= o.BytesIn
	d.BytesOut -= o.BytesOut
	d.SendErrors -= o.SendErrors
	d.SessionsOpened -= o.SessionsOpened
	for i := range d.Drops {
		d.Drops[i] -= o.Drops[i]
	}
	return d
}

// Config configures a reflector. The zero value works.
type Config struct {
	// IdleTimeout ends a session that sent nothing for this long
	// (default 30s).
	IdleTimeout time.Duration
	// ReportInterval is how often OnInterval is called (default 1s; a
	// negative value turns interval reports off).
	ReportInterval time.Duration
	// OnInterval receives the counters of each interval. It runs on the
	// reflecting goroutine and must return quickly.
	OnInterval func(Stats)
	// Clock defaults to the system clock.
	Clock clock.Clock
	// Secret keys the cookies; a random one is made when nil.
	Secret []byte
}

// cookieEpoch is how long a cookie stays valid before a session uses it: a
// cookie is accepted in the epoch it was made and the next.
const cookieEpoch = int64(60 * time.Second)

type session struct {
	addr     netip.AddrPort
	count    uint64
	lastSeen int64
	closed   bool
}

// Reflector holds the state of one reflecting loop. It is not safe for
// concurrent use: Serve owns it.
type Reflector struct {
	cfg      Config
	clk      clock.Clock
	mac      hash.Hash
	macIn    [8 + 16 + 2]byte
	macOut   [sha256.Size]byte
	sessions map[uint64]*session
	open     int
	st       Stats
}

// New returns a Reflector for cfg.
func New(cfg Config) (*Reflector, error) {
	if cfg.IdleTimeout <= 0 {
		cfg.IdleTimeout = 30 * time.Second
	}
	if cfg.ReportInterval == 0 {
		cfg.ReportInterval = time.Second
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.NewSystem()
	}
	if cfg.Secret == nil {
		cfg.Secret = make([]byte, 32)
		if _, err := rand.Read(cfg.Secret); err != nil {
			return nil, fmt.Errorf("make cookie secret: %w", err)
		}
	}
	return &Reflector{
		cfg:      cfg,
		clk:      cfg.Clock,
		mac:      hmac.New(sha256.New, cfg.Secret),
		sessions: make(map[uint64]*session),
	}, nil
}

// cookie returns the token for addr in the given epoch.
func (r *Reflector) cookie(addr netip.AddrPort, epoch int64) uint64 {
	binary.BigEndian.PutUint64(r.macIn[0:], uint64(epoch))
	a := addr.Addr().As16()
	copy(r.macIn[8:], a[:])
	binary.BigEndian.PutUint16(r.macIn[24:], addr.Port())
	r.mac.Reset()
	r.mac.Write(r.macIn[:])
	return binary.BigEndian.Uint64(r.mac.Sum(r.macOut[:0]))
}

func (r *Reflector) validCookie(token uint64, addr netip.AddrPort, now int64) bool {
	e := now / cookieEpoch
	return token == r.cookie(addr, e) || token == r.cookie(addr, e-1)
}

// Handle processes one received message pkt from addr, received at t2
// (Unix ns), and returns the reply to send, or nil. The reply is written
// into pkt's memory; it never allocates except to open a session.
func (r *Reflector) Handle(pkt []byte, addr netip.AddrPort, t2 int64) []byte {
	r.st.PacketsIn++
	r.st.BytesIn += uint64(len(pkt))
	if len(pkt) > MaxMessage {
		r.st.Drops[DropOversize]++
		return nil
	}
	var h wire.Header
	if err := h.Decode(pkt); err != nil {
		switch {
		case errors.Is(err, wire.ErrShort):
			r.st.Drops[DropShort]++
		case errors.Is(err, wire.ErrMagic):
			r.st.Drops[DropMagic]++
		case errors.Is(err, wire.ErrVersion):
			r.st.Drops[DropVersion]++
		default:
			r.st.Drops[DropType]++
		}
		return nil
	}
	switch h.Type {
	case wire.TypeHello:
		// Stateless: answer with a cookie no larger than the Hello.
		h = wire.Header{Type: wire.TypeCookie, Token: r.cookie(addr, t2/cookieEpoch), Seq: h.Seq, T1: h.T1, T2: t2}
		return r.reply(pkt[:wire.HeaderLen], &h)
	case wire.TypeProbe, wire.TypeClose:
		s := r.session(h.Token, addr, t2)
		if s == nil {
			return nil
		}
		s.lastSeen = t2
		if h.Type == wire.TypeClose {
			if !s.closed {
				s.closed = true
				r.open--
			}
			h = wire.Header{Type: wire.TypeCloseAck, Token: h.Token, Seq: h.Seq, T1: h.T1, T2: t2, Count: s.count}
			return r.reply(pkt[:wire.HeaderLen], &h)
		}
		if s.closed {
			r.st.Drops[DropClosed]++
			return nil
		}
		if h.Flags&wire.FlagWarmup == 0 {
			s.count++
		}
		h.Type, h.T2, h.Count = wire.TypeReply, t2, s.count
		return r.reply(pkt, &h)
	default:
		r.st.Drops[DropType]++
		return nil
	}
}

// reply stamps T3 and encodes h into pkt.
func (r *Reflector) reply(pkt []byte, h *wire.Header) []byte {
	h.T3 = r.clk.Now()
	_ = h.Encode(pkt) // pkt is at least HeaderLen: it decoded
	return pkt
}

// session finds the session for token, opening it when token is a valid
// cookie for addr. It counts and returns nil when the message must be dropped.
func (r *Reflector) session(token uint64, addr netip.AddrPort, now int64) *session {
	s := r.sessions[token]
	if s == nil {
		if !r.validCookie(token, addr, now) {
			r.st.Drops[DropToken]++
			return nil
		}
		s = &session{addr: addr}
		r.sessions[token] = s
		r.open++
		r.st.SessionsOpened++
		return s
	}
	if s.addr != addr {
		r.st.Drops[DropAddress]++
		return nil
	}
	return s
}

// Sweep forgets sessions idle for longer than the idle timeout at now.
func (r *Reflector) Sweep(now int64) {
	for tok, s := range r.sessions {
		if now-s.lastSeen > int64(r.cfg.IdleTimeout) {
			if !s.closed {
				r.open--
			}
			delete(r.sessions, tok)
		}
	}
}

// Stats returns the counters since the reflector started.
func (r *Reflector) Stats() Stats {
	s := r.st
	s.Sessions = r.open
	return s
}

// Serve reflects messages arriving on conn until ctx is done or conn is
// closed, and returns the counters since start. It returns a nil error when
// stopped through ctx.
func (r *Reflector) Serve(ctx context.Context, conn transport.PacketConn) (Stats, error) {
	stop := context.AfterFunc(ctx, func() { conn.SetReadDeadline(time.Unix(1, 0)) })
	defer stop()

	buf := make([]byte, MaxMessage+1)
	start := r.clk.Now()
	tick := int64(r.cfg.ReportInterval)
	if tick < 0 {
		tick = int64(r.cfg.IdleTimeout)
	}
	next := start + tick
	var last Stats
	lastAt := start
	var deadline int64
	for {
		if next != deadline {
			deadline = next
			if err := conn.SetReadDeadline(r.clk.Time(deadline)); err != nil {
				return r.total(start), fmt.Errorf("set read deadline: %w", err)
			}
		}
		if ctx.Err() != nil {
			return r.total(start), nil
		}
		n, from, err := conn.ReadFrom(buf)
		now := r.clk.Now()
		if err != nil {
			switch {
			case errors.Is(err, os.ErrDeadlineExceeded):
			case errors.Is(err, net.ErrClosed):
				return r.total(start), nil
			default:
				// Errors a socket reports for an earlier send (ICMP) do
				// not stop a reflector that serves others.
				r.st.SendErrors++
			}
		} else if reply := r.Handle(buf[:n], from, now); reply != nil {
			if _, err := conn.WriteTo(reply, from); err != nil {
				r.st.SendErrors++
			} else {
				r.st.PacketsOut++
				r.st.BytesOut += uint64(len(reply))
			}
		}
		if now >= next {
			r.Sweep(now)
			if r.cfg.ReportInterval > 0 && r.cfg.OnInterval != nil {
				cur := r.Stats()
				iv := cur.sub(last)
				iv.Elapsed = time.Duration(now - lastAt)
				last, lastAt = cur, now
				r.cfg.OnInterval(iv)
			}
			for next <= now {
				next += tick
			}
		}
	}
}

func (r *Reflector) total(start int64) Stats {
	s := r.Stats()
	s.Elapsed = time.Duration(r.clk.Now() - start)
	return s
}
