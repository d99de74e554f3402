package foreign

import (
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/volley-net/volley/internal/result"
	"github.com/volley-net/volley/internal/stamp"
	"github.com/volley-net/volley/internal/transport"
	"github.com/volley-net/volley/internal/wire"
)

// STAMPConfig is how a STAMP Session-Sender speaks to its reflector.
type STAMPConfig struct {
	// Key is the HMAC key of RFC 8762's authenticated mode; nil:
	// unauthenticated.
	Key []byte
	// SSID is the Session-Sender Identifier sent (RFC 8972 §3).
	SSID uint16
	// Stateful: the user says the reflector numbers its replies itself
	// (RFC 8762 §4.2's stateful mode): its number, plus one, is then the
	// count of probes it received, which splits loss by direction.
	Stateful bool
	// Size is the size of every packet sent, at least the mode's base
	// length (0: each probe's own size, at least the base); the client's
	// probes are at least a volley header, 64 bytes, and a plain RFC 8762
	// packet is 44.
	Size int
	// Warmup: the run sends warm-up probes. A stateful reflector counts
	// them too, and which way the lost ones were lost is not known, so
	// its counts cannot be made the measured probes' (no directions).
	Warmup bool
	// Err is the error estimate sent with each probe (the sender's clock);
	// 0 sends 0x0001 (not synchronized, 2^-32 s), as RFC 4656 forbids a
	// zero multiplier.
	Err stamp.ErrorEstimate
}

// STAMP is a connection to a STAMP Session-Reflector (RFC 8762, RFC
// 8972; a TWAMP-light reflector answers the same packets) that speaks
// volley's messages to the client: it is a client.Foreign.
//
// Write takes a volley Probe and sends the Session-Sender packet made of
// it: STAMP's sequence number is the probe's Seq less one (STAMP counts
// from 0), T1 the probe's, in NTP format, and the packet the probe's size
// (at least the mode's base length), the room after the base filled with
// an Extra Padding TLV (RFC 8972 §4.1). Read returns each reply as a
// volley Reply: the probe's Token, Seq and T1, the reflector's T2 and T3,
// and with Stateful its count of probes received. A reply that does not
// parse, fails its HMAC or carries another session's SSID is returned as
// one byte that is no volley message, which the client counts as an
// error.
//
// Write is called by the run's sender, Read by its receiver, at once:
// what they share is atomic.
type STAMP struct {
	transport.Conn
	cfg  STAMPConfig
	base int

	wbuf []byte // Write's packet (the sender's alone)
	rbuf []byte // Read's packet (the receiver's alone)

	token    atomic.Uint64 // the run's token, from its probes
	lastSent atomic.Uint64 // the highest volley Seq written

	replies    atomic.Uint64
	renumbered atomic.Uint64
	authFailed atomic.Uint64 // replies whose HMAC did not match
	lastErr    atomic.Uint32 // the reflector's last error estimate
	lastTTL    atomic.Uint32 // the last Session-Sender TTL reported
}

// NewSTAMP returns the STAMP Session-Sender speaking through conn, a
// connected UDP socket, as cfg says.
func NewSTAMP(conn transport.Conn, cfg STAMPConfig) *STAMP {
	if cfg.Err == 0 {
		cfg.Err = stamp.NewErrorEstimate(false, 0)
	}
	return &STAMP{
		Conn: conn,
		cfg:  cfg,
		base: stamp.BaseLength(cfg.Key),
		rbuf: make([]byte, 1<<16),
	}
}

// ErrNotProbe is Write's error for a message that is not a volley Probe:
// a STAMP reflector is sent probes only.
var ErrNotProbe = errors.New("foreign: only probes go to a STAMP reflector")

// packetSize returns the size of the STAMP packet for a probe of n bytes:
// n, but at least the base length, and never 1 to 3 bytes past it (no
// TLV fits there: it gets an empty Extra Padding TLV).
func (s *STAMP) packetSize(n int) int {
	if s.cfg.Size > 0 {
		n = s.cfg.Size
	}
	switch extra := n - s.base; {
	case extra <= 0:
		return s.base
	case extra < stamp.TLVHeaderLen:
		return s.base + stamp.TLVHeaderLen
	case extra > stamp.TLVHeaderLen+0xffff:
		return s.base + stamp.TLVHeaderLen + 0xffff
	}
	return n
}

// Write sends the Session-Sender packet of the volley probe b, and
// returns len(b).
func (s *STAMP) Write(b []byte) (int, error) {
	var h wire.Header
	if err := h.Decode(b); err != nil {
		return 0, fmt.Errorf("foreign: stamp: %w", err)
	}
	if h.Type != wire.TypeProbe {
		return 0, fmt.Errorf("%w, not a %v", ErrNotProbe, h.Type)
	}
	size := s.packetSize(len(b))
	if cap(s.wbuf) < size {
		s.wbuf = make([]byte, size)
	}
	p := s.wbuf[:size]
	snd := stamp.Sender{Seq: uint32(h.Seq - 1), T1: stamp.FromUnixNano(h.T1), Err: s.cfg.Err, SSID: s.cfg.SSID}
	if size > s.base {
		stamp.PutPadding(p[s.base:])
	}
	if err := stamp.PutSender(p, &snd, s.cfg.Key); err != nil {
		return 0, err
	}
	s.token.Store(h.Token)
	for {
		last := s.lastSent.Load()
		if h.Seq <= last || s.lastSent.CompareAndSwap(last, h.Seq) {
			break
		}
	}
	if _, err := s.Conn.Write(p); err != nil {
		return 0, err
	}
	return len(b), nil
}

// notVolley is what Read returns for a reply it rejects: one byte, which
// no volley message is.
const notVolley = 1

// Read reads the next STAMP reply and writes it into b as a volley Reply
// header; it returns the reply's length, or wire.HeaderLen when that is
// shorter (b must hold wire.HeaderLen bytes).
func (s *STAMP) Read(b []byte) (int, error) {
	if len(b) < wire.HeaderLen {
		return 0, fmt.Errorf("foreign: stamp: read buffer of %d bytes, want %d", len(b), wire.HeaderLen)
	}
	n, err := s.Conn.Read(s.rbuf)
	if err != nil {
		return 0, err
	}
	r, err := stamp.ParseReflected(s.rbuf[:n], s.cfg.Key)
	if errors.Is(err, stamp.ErrAuth) {
		s.authFailed.Add(1)
	}
	if err != nil || (r.SSID != s.cfg.SSID && r.SSID != 0) {
		b[0] = 0
		return notVolley, nil
	}
	s.replies.Add(1)
	if r.Seq != r.SenderSeq {
		s.renumbered.Add(1)
	}
	s.lastErr.Store(uint32(r.Err))
	if r.SenderTTL != 0 {
		s.lastTTL.Store(uint32(r.SenderTTL))
	}
	seq := unwrap(s.lastSent.Load(), r.SenderSeq+1)
	h := wire.Header{
		Type:  wire.TypeReply,
		Token: s.token.Load(),
		Seq:   seq,
		T1:    r.SenderT1.UnixNano(),
		T2:    r.T2.UnixNanoIn(r.Err),
		T3:    r.T3.UnixNanoIn(r.Err),
	}
	if s.cfg.Stateful && !s.cfg.Warmup {
		h.Received = unwrap(seq, r.Seq+1)
	}
	if err := h.Encode(b); err != nil {
		return 0, err
	}
	return min(max(n, wire.HeaderLen), len(b)), nil
}

// unwrap returns the 64-bit number whose low 32 bits are v, nearest to
// near: STAMP's numbers are 32 bits, volley's 64.
func unwrap(near uint64, v uint32) uint64 {
	d := int64(int32(v - uint32(near)))
	if d < 0 && uint64(-d) > near {
		return uint64(v) // before near's first wrap
	}
	return uint64(int64(near) + d)
}

// SetWriteDeadline sets the write deadline of the socket, when it has one
// (the client bounds every write).
func (s *STAMP) SetWriteDeadline(t time.Time) error { return transport.SetWriteDeadline(s.Conn, t) }

// Notes of a STAMP run whose loss is not split by direction.
const (
	noteStateless = "a stateless reflector copies the sender's sequence numbers, so they do not say which way a probe was lost; rerun with --stamp-stateful if the reflector numbers its own"
	noteWarmup    = "a stateful reflector counts the warm-up probes too, and which way those lost were lost is not known, so loss is not split by direction; rerun with --warmup 0 to split it"
	noteLooksFull = "; %d of %d replies carried the reflector's own numbers: it seems to be stateful"
	noteAuth      = "%d replies failed the HMAC check (counted as errors): the reflector's key is another, or it answers unauthenticated"
)

// Peer says what a STAMP reflector's replies tell.
func (s *STAMP) Peer() *result.Peer {
	return &result.Peer{
		Protocol:   "stamp",
		OneWay:     true,
		Directions: s.cfg.Stateful && !s.cfg.Warmup,
		STAMP: &result.STAMPPeer{
			Authenticated: s.cfg.Key != nil,
			Stateful:      s.cfg.Stateful,
			SSID:          s.cfg.SSID,
		},
	}
}

// PeerResults says what the reflector said so far, and what its replies
// could not tell.
func (s *STAMP) PeerResults() *result.PeerResults {
	p := &result.PeerResults{STAMP: &result.STAMPResults{
		Renumbered: s.renumbered.Load(),
		SenderTTL:  uint8(s.lastTTL.Load()),
	}}
	switch {
	case !s.cfg.Stateful:
		p.Note = noteStateless
		if r := p.STAMP.Renumbered; r > 0 {
			p.Note += fmt.Sprintf(noteLooksFull, r, s.replies.Load())
		}
	case s.cfg.Warmup:
		p.Note = noteWarmup
	}
	if n := s.authFailed.Load(); n > 0 {
		p.Note = strings.TrimPrefix(p.Note+"; ", "; ") + fmt.Sprintf(noteAuth, n)
	}
	if s.replies.Load() > 0 {
		e := stamp.ErrorEstimate(s.lastErr.Load())
		p.STAMP.ErrorEstimate = result.ErrorEstimate{
			Synchronized: e.Synchronized(),
			Error:        time.Duration(e.Nanoseconds()),
			Raw:          uint16(e),
		}
	}
	return p
}
