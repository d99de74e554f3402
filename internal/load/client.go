package load

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/volley-net/volley/internal/wire"
)

// The client's side: a Stream dials, opens a session, asks for load and
// moves the bytes.

// defaultTimeout is Dialer.Timeout's default.
const defaultTimeout = 5 * time.Second

// redialAfter is how old a stream's handshake may be when Start asks for
// load on it: older, Start dials again, since the reflector's listener
// closes a connection that has not gone past its handshake within its
// handshake timeout (5 s by default), and a cookie lives 10 to 20 s.
const redialAfter = 2 * time.Second

// maxAnswer bounds a reflector's answer a client reads (a Cookie, a
// LoadAck, an Error: a header and a tag).
const maxAnswer = 1024

// downBuf is the buffer a download is read into.
const downBuf = 128 << 10

// streams numbers the streams of the process (a TypeLoad's Seq).
var streams atomic.Uint64

// Stream is one bulk stream of a client. Start, Stop and Moved may be
// called from different goroutines; Start and Stop once each.
type Stream struct {
	d      Dialer
	conn   net.Conn
	signer *wire.Signer // nil without a key
	token  uint64
	nonce  uint64
	dialed time.Time

	dir     Direction
	granted time.Duration
	start   time.Time
	rate    uint64 // the reflector's cap, bits/s (0: none)

	moved   atomic.Uint64 // Down: bytes read; Up: bytes written
	up      atomic.Bool   // an upload: set once acked is, for Moved
	acked   acked         // Up over TCP: what the kernel says was acknowledged
	done    chan struct{} // closed when the mover returns; nil before Start
	err     error         // what ended the mover, once done is closed
	stopped atomic.Bool
	once    sync.Once
}

// Dial connects to the reflector and opens a session (Hello, Cookie), so
// that Start asks for load at once.
func (d *Dialer) Dial(ctx context.Context) (*Stream, error) {
	s := &Stream{d: *d}
	if s.d.Timeout <= 0 {
		s.d.Timeout = defaultTimeout
	}
	if len(s.d.Key) > 0 {
		s.signer = wire.NewSigner(s.d.Key)
	}
	if err := s.dial(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

// dial connects and runs the handshake on the new connection.
func (s *Stream) dial(ctx context.Context) error {
	dctx, cancel := context.WithTimeout(ctx, s.d.Timeout)
	defer cancel()
	var c net.Conn
	var err error
	if s.d.Connect != nil {
		c, err = s.d.Connect(dctx, s.d.Network, s.d.Address)
	} else {
		c, err = (&net.Dialer{}).DialContext(dctx, s.d.Network, s.d.Address)
	}
	if err != nil {
		return fmt.Errorf("load: connect to %s: %w", s.d.Address, err)
	}
	s.conn = c
	if err := s.handshake(ctx); err != nil {
		c.Close()
		return err
	}
	s.dialed = time.Now()
	return nil
}

// handshake sends a Hello and waits for its Cookie.
func (s *Stream) handshake(ctx context.Context) error {
	var nb [8]byte
	if _, err := rand.Read(nb[:]); err != nil {
		return fmt.Errorf("load: make handshake nonce: %w", err)
	}
	s.nonce = binary.BigEndian.Uint64(nb[:])
	hello := wire.Header{Type: wire.TypeHello, Seq: s.nonce, T1: time.Now().UnixNano()}
	h, err := s.exchange(ctx, &hello, wire.TypeCookie)
	if err != nil {
		return err
	}
	s.token = h.Token
	return nil
}

// exchange sends m and returns the answer of type want to it (its Seq
// echoed), or the reflector's refusal (*Refused), within the timeout.
func (s *Stream) exchange(ctx context.Context, m *wire.Header, want wire.Type) (wire.Header, error) {
	stop := context.AfterFunc(ctx, func() { _ = s.conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	if err := s.conn.SetDeadline(time.Now().Add(s.d.Timeout)); err != nil {
		return wire.Header{}, err
	}
	defer s.conn.SetDeadline(time.Time{})
	if err := s.write(m); err != nil {
		return wire.Header{}, s.failed(ctx, "send "+m.Type.String(), err)
	}
	var buf [maxAnswer]byte
	for {
		n, err := s.read(buf[:])
		if err != nil {
			return wire.Header{}, s.failed(ctx, "wait for the answer to "+m.Type.String(), err)
		}
		var h wire.Header
		if h.Decode(buf[:n]) != nil || h.Seq != m.Seq {
			continue // not an answer to m
		}
		if h.Type == wire.TypeError {
			// Unsigned by design: a client without the key must be able
			// to read why it was refused.
			return h, s.refused(h.Code)
		}
		if h.Type != want {
			continue
		}
		if s.signer != nil && (h.Flags&wire.FlagAuth == 0 || s.signer.Verify(buf[:n]) != nil) {
			return h, fmt.Errorf("load: the %s from %s carries no valid tag (it has no key, or another)", h.Type, s.d.Address)
		}
		return h, nil
	}
}

// refused is the error of a refusal with code.
func (s *Stream) refused(code wire.ErrorCode) error {
	r := &Refused{Code: code, Reason: code.String()}
	switch {
	case code == wire.ErrorAuth && s.signer == nil:
		r.Reason += ": the reflector requires a key (--key)"
	case code == wire.ErrorAuth:
		r.Reason += ": the reflector has a different key"
	}
	return r
}

// failed is the error of a step of the handshake that failed with err.
func (s *Stream) failed(ctx context.Context, step string, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return fmt.Errorf("load: %s at %s: no answer within %s", step, s.d.Address, s.d.Timeout)
	}
	return fmt.Errorf("load: %s at %s: %w", step, s.d.Address, err)
}

// write sends m framed as the stream listener reads messages: its length
// (4 bytes, big-endian), then the header and, with a key, its tag.
func (s *Stream) write(m *wire.Header) error {
	var b [4 + wire.HeaderLen + wire.TagLen]byte
	n := wire.HeaderLen
	if s.signer != nil {
		n += wire.TagLen
	}
	binary.BigEndian.PutUint32(b[:], uint32(n))
	m.Seal(b[4:4+n], s.signer)
	_, err := s.conn.Write(b[:4+n])
	return err
}

// read reads one framed message into buf, no more: the bytes after it
// are the stream's.
func (s *Stream) read(buf []byte) (int, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(s.conn, hdr[:]); err != nil {
		return 0, err
	}
	n := int(binary.BigEndian.Uint32(hdr[:]))
	if n > len(buf) {
		return 0, fmt.Errorf("an answer of %d bytes (the most is %d): not a volley reflector", n, len(buf))
	}
	_, err := io.ReadFull(s.conn, buf[:n])
	return n, err
}

// Start asks the reflector for a stream of dir lasting at most dur, and
// returns once it granted it (data then moves on a goroutine the stream
// owns, until Stop) or refused it (a *Refused error). ctx bounds the wait
// for the answer only.
func (s *Stream) Start(ctx context.Context, dir Direction, dur time.Duration) error {
	if s.done != nil {
		return errors.New("load: the stream was started already")
	}
	if dir != Up && dir != Down {
		return fmt.Errorf("load: no direction %d", dir)
	}
	if dur <= 0 || dur > MaxDuration {
		return fmt.Errorf("load: a stream of %s: want more than 0 and at most %s", dur, MaxDuration)
	}
	if time.Since(s.dialed) > redialAfter {
		s.conn.Close()
		if err := s.dial(ctx); err != nil {
			return err
		}
	}
	m := wire.Header{Type: wire.TypeLoad, Token: s.token, Nonce: s.nonce, Seq: streams.Add(1),
		T1: time.Now().UnixNano(), HoldMicro: uint32(dur / time.Microsecond)}
	if dir == Down {
		m.Flags = wire.FlagLoadDown
	}
	h, err := s.exchange(ctx, &m, wire.TypeLoadAck)
	if err != nil {
		return err
	}
	s.dir, s.start, s.rate = dir, time.Now(), h.RateLimit
	s.granted = time.Duration(h.HoldMicro) * time.Microsecond
	s.done = make(chan struct{})
	if dir == Up {
		s.acked.init(s.conn)
		s.up.Store(true)
	}
	go s.move()
	return nil
}

// Done returns a channel closed once the stream's bytes stopped moving:
// Stop asked, the grant ended, or something cut it (Stop then says
// what). nil before Start.
func (s *Stream) Done() <-chan struct{} { return s.done }

// Granted returns the duration the reflector granted, and its cap on
// what it sends in bits/s (0: none); zero before Start.
func (s *Stream) Granted() (time.Duration, uint64) { return s.granted, s.rate }

// move moves the stream's bytes until the connection ends.
func (s *Stream) move() {
	defer close(s.done)
	var err error
	if s.dir == Down {
		err = s.download()
	} else {
		err = s.upload()
	}
	s.err = s.ended(err)
}

// download reads the reflector's bytes into a fixed buffer, counting
// them.
func (s *Stream) download() error {
	buf := make([]byte, downBuf)
	for {
		if err := s.conn.SetReadDeadline(time.Now().Add(s.d.Timeout)); err != nil {
			return err
		}
		n, err := s.conn.Read(buf)
		s.moved.Add(uint64(n))
		if err != nil {
			return err
		}
	}
}

// upload writes zeros to the reflector, counting them.
func (s *Stream) upload() error {
	for {
		if err := s.conn.SetWriteDeadline(time.Now().Add(s.d.Timeout)); err != nil {
			return err
		}
		n, err := s.conn.Write(zeros[:])
		s.moved.Add(uint64(n))
		if err != nil && (n == 0 || !errors.Is(err, os.ErrDeadlineExceeded)) {
			return err // a write cut after some progress goes on
		}
	}
}

// ended says what err, which ended the mover, means: nothing when Stop
// asked for it, or when the reflector closed at the end of the grant (in
// its last quarter, or last second: the two ends start its clock half a
// round trip apart).
func (s *Stream) ended(err error) error {
	if s.stopped.Load() {
		return nil
	}
	ran := time.Since(s.start)
	closed := errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
	if closed && ran >= s.granted-min(time.Second, s.granted/4) {
		return nil
	}
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return fmt.Errorf("load: the %s stream to %s made no progress for %s", s.dir, s.d.Address, s.d.Timeout)
	}
	if closed {
		return fmt.Errorf("load: the reflector at %s ended the %s stream after %s of %s",
			s.d.Address, s.dir, ran.Round(time.Millisecond), s.granted)
	}
	return fmt.Errorf("load: the %s stream to %s: %w", s.dir, s.d.Address, err)
}

// Moved returns the payload bytes delivered so far: received by the client
// (Down), or acknowledged by the reflector's kernel (Up; the bytes written
// where the system cannot tell). Safe to call from any goroutine.
func (s *Stream) Moved() uint64 {
	if s.up.Load() {
		if n, ok := s.acked.read(); ok {
			return n
		}
	}
	return s.moved.Load()
}

// Stop ends the stream and waits for its goroutine. It returns what cut
// the stream short, if anything (nil when it ended because asked, or its
// granted time was up).
func (s *Stream) Stop() error {
	s.once.Do(func() {
		s.stopped.Store(true)
		if s.up.Load() {
			s.acked.read() // the last count, while the socket is open
		}
		s.conn.Close()
		if s.done != nil {
			<-s.done
		}
	})
	if s.done == nil {
		return nil
	}
	return s.err
}
