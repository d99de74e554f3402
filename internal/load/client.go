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

// ErrStopped: Start was asked for a stream that Stop ended first.
var ErrStopped = errors.New("load: the stream was stopped")

// Stream is one bulk stream of a client. Start, Stop, Moved, Done and
// Granted may be called from different goroutines; Start and Stop once
// each (a Stop during Start makes Start return ErrStopped).
type Stream struct {
	d      Dialer
	signer *wire.Signer // nil without a key

	mu      sync.Mutex // guards the fields below it, up to moved
	conn    net.Conn   // the connection of the handshake, then of the data
	token   uint64
	nonce   uint64
	dialed  time.Time
	started bool
	stopped bool
	dir     Direction
	granted time.Duration
	start   time.Time
	rate    uint64        // the reflector's cap, bits/s (0: none)
	done    chan struct{} // closed when the mover returns; nil before Start

	moved atomic.Uint64 // Down: bytes read; Up: bytes written
	up    atomic.Bool   // an upload: set once acked is, for Moved
	acked acked         // Up over TCP: what the kernel says was acknowledged
	err   error         // what ended the mover, once done is closed
	once  sync.Once
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
	c, sess, err := s.dial(ctx, nil)
	if err != nil {
		return nil, err
	}
	s.conn, s.token, s.nonce, s.dialed = c, sess.token, sess.nonce, time.Now()
	return s, nil
}

// session is what a handshake opened: its cookie's token and its nonce.
type session struct{ token, nonce uint64 }

// dial connects and runs the handshake on the new connection, which it
// hands to keep (when set) before the handshake, so that a Stop can cut
// it; keep returns false when the stream was stopped, and dial then
// closes the connection and returns ErrStopped.
func (s *Stream) dial(ctx context.Context, keep func(net.Conn) bool) (net.Conn, session, error) {
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
		return nil, session{}, fmt.Errorf("load: connect to %s: %w", s.d.Address, err)
	}
	if keep != nil && !keep(c) {
		c.Close()
		return nil, session{}, ErrStopped
	}
	sess, err := s.handshake(ctx, c)
	if err != nil {
		c.Close()
		return nil, session{}, err
	}
	return c, sess, nil
}

// handshake sends a Hello on c and waits for its Cookie.
func (s *Stream) handshake(ctx context.Context, c net.Conn) (session, error) {
	var nb [8]byte
	if _, err := rand.Read(nb[:]); err != nil {
		return session{}, fmt.Errorf("load: make handshake nonce: %w", err)
	}
	nonce := binary.BigEndian.Uint64(nb[:])
	hello := wire.Header{Type: wire.TypeHello, Seq: nonce, T1: time.Now().UnixNano()}
	h, err := s.exchange(ctx, c, &hello, wire.TypeCookie)
	if err != nil {
		return session{}, err
	}
	return session{token: h.Token, nonce: nonce}, nil
}

// exchange sends m on c and returns the answer of type want to it (its
// Seq echoed), or the reflector's refusal (*Refused), within the
// timeout; ctx's error when ctx ends first.
func (s *Stream) exchange(ctx context.Context, c net.Conn, m *wire.Header, want wire.Type) (wire.Header, error) {
	stop := context.AfterFunc(ctx, func() { _ = c.SetDeadline(time.Unix(1, 0)) })
	if err := c.SetDeadline(time.Now().Add(s.d.Timeout)); err != nil {
		stop()
		return wire.Header{}, err
	}
	h, err := s.ask(ctx, c, m, want)
	// The deadline is cleared only once the AfterFunc cannot set it any
	// more: one that ran left a past deadline, and ctx's error stands.
	if !stop() {
		return wire.Header{}, ctx.Err()
	}
	if derr := c.SetDeadline(time.Time{}); err == nil && derr != nil {
		return wire.Header{}, derr
	}
	return h, err
}

// ask is exchange's I/O, within the deadline exchange set.
func (s *Stream) ask(ctx context.Context, c net.Conn, m *wire.Header, want wire.Type) (wire.Header, error) {
	if err := s.write(c, m); err != nil {
		return wire.Header{}, s.failed(ctx, "send "+m.Type.String(), err)
	}
	var buf [maxAnswer]byte
	for {
		n, err := s.read(c, buf[:])
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

// write sends m on c framed as the stream listener reads messages: its
// length (4 bytes, big-endian), then the header and, with a key, its tag.
func (s *Stream) write(c net.Conn, m *wire.Header) error {
	var b [4 + wire.HeaderLen + wire.TagLen]byte
	n := wire.HeaderLen
	if s.signer != nil {
		n += wire.TagLen
	}
	binary.BigEndian.PutUint32(b[:], uint32(n))
	m.Seal(b[4:4+n], s.signer)
	_, err := c.Write(b[:4+n])
	return err
}

// read reads one framed message from c into buf, no more: the bytes after
// it are the stream's.
func (s *Stream) read(c net.Conn, buf []byte) (int, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(c, hdr[:]); err != nil {
		return 0, err
	}
	n := int(binary.BigEndian.Uint32(hdr[:]))
	if n > len(buf) {
		return 0, fmt.Errorf("an answer of %d bytes (the most is %d): not a volley reflector", n, len(buf))
	}
	_, err := io.ReadFull(c, buf[:n])
	return n, err
}

// Start asks the reflector for a stream of dir lasting at most dur, and
// returns once it granted it (data then moves on a goroutine the stream
// owns, until Stop) or refused it (a *Refused error). ctx bounds the wait
// for the answer only. A Stop before the grant makes it return
// ErrStopped, with nothing left running.
func (s *Stream) Start(ctx context.Context, dir Direction, dur time.Duration) error {
	if dir != Up && dir != Down {
		return fmt.Errorf("load: no direction %d", dir)
	}
	if dur <= 0 || dur > MaxDuration {
		return fmt.Errorf("load: a stream of %s: want more than 0 and at most %s", dur, MaxDuration)
	}
	s.mu.Lock()
	if s.started {
		s.mu.Unlock()
		return errors.New("load: the stream was started already")
	}
	s.started = true
	stopped, stale, c := s.stopped, time.Since(s.dialed) > redialAfter, s.conn
	sess := session{token: s.token, nonce: s.nonce}
	s.mu.Unlock()
	if stopped {
		return ErrStopped
	}
	if stale {
		c.Close()
		var err error
		if c, sess, err = s.dial(ctx, s.keep); err != nil {
			return s.stoppedOr(err)
		}
	}
	m := wire.Header{Type: wire.TypeLoad, Token: sess.token, Nonce: sess.nonce, Seq: streams.Add(1),
		T1: time.Now().UnixNano(), HoldMicro: uint32(dur / time.Microsecond)}
	if dir == Down {
		m.Flags = wire.FlagLoadDown
	}
	h, err := s.exchange(ctx, c, &m, wire.TypeLoadAck)
	if err != nil {
		return s.stoppedOr(err)
	}
	if dir == Up {
		s.acked.init(c)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		c.Close() // Stop closed it already, unless it ran during a redial
		return ErrStopped
	}
	s.dir, s.start, s.rate = dir, time.Now(), h.RateLimit
	s.granted = time.Duration(h.HoldMicro) * time.Microsecond
	s.done = make(chan struct{})
	if dir == Up {
		s.up.Store(true)
	}
	go s.move(c, dir, s.done)
	return nil
}

// keep makes c the stream's connection, unless the stream was stopped
// (false): Start's redial.
func (s *Stream) keep(c net.Conn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return false
	}
	s.conn = c
	return true
}

// stoppedOr returns ErrStopped when the stream was stopped (which made
// Start's I/O fail), else err.
func (s *Stream) stoppedOr(err error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return ErrStopped
	}
	return err
}

// Done returns a channel closed once the stream's bytes stopped moving:
// Stop asked, the grant ended, or something cut it (Stop then says
// what). nil before Start.
func (s *Stream) Done() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.done
}

// Granted returns the duration the reflector granted, and its cap on
// what it sends in bits/s (0: none); zero before Start.
func (s *Stream) Granted() (time.Duration, uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.granted, s.rate
}

// move moves the stream's bytes on c until the connection ends, then
// closes done.
func (s *Stream) move(c net.Conn, dir Direction, done chan struct{}) {
	defer close(done)
	var err error
	if dir == Down {
		err = s.download(c)
	} else {
		err = s.upload(c)
	}
	s.err = s.ended(err)
}

// download reads the reflector's bytes from c into a fixed buffer,
// counting them.
func (s *Stream) download(c net.Conn) error {
	buf := make([]byte, downBuf)
	for {
		if err := c.SetReadDeadline(time.Now().Add(s.d.Timeout)); err != nil {
			return err
		}
		n, err := c.Read(buf)
		s.moved.Add(uint64(n))
		if err != nil {
			return err
		}
	}
}

// upload writes zeros to the reflector on c, counting them.
func (s *Stream) upload(c net.Conn) error {
	for {
		if err := c.SetWriteDeadline(time.Now().Add(s.d.Timeout)); err != nil {
			return err
		}
		n, err := c.Write(zeros[:])
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
	s.mu.Lock()
	stopped, start, granted, dir := s.stopped, s.start, s.granted, s.dir
	s.mu.Unlock()
	if stopped {
		return nil
	}
	ran := time.Since(start)
	closed := errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
	if closed && ran >= granted-min(time.Second, granted/4) {
		return nil
	}
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return fmt.Errorf("load: the %s stream to %s made no progress for %s", dir, s.d.Address, s.d.Timeout)
	}
	if closed {
		return fmt.Errorf("load: the reflector at %s ended the %s stream after %s of %s",
			s.d.Address, dir, ran.Round(time.Millisecond), granted)
	}
	return fmt.Errorf("load: the %s stream to %s: %w", dir, s.d.Address, err)
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

// WaitMoved waits until Moved is at least n (nil), the stream ended
// first (an error saying so, with what ended it), or ctx ended (its
// error). It looks every millisecond; before Start it waits for ctx.
func (s *Stream) WaitMoved(ctx context.Context, n uint64) error {
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for {
		if s.Moved() >= n {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("load: %d of %d bytes moved: %w", s.Moved(), n, ctx.Err())
		case <-s.Done():
			if s.Moved() >= n {
				return nil
			}
			if s.err != nil {
				return fmt.Errorf("load: the stream ended with %d of %d bytes moved: %w", s.Moved(), n, s.err)
			}
			return fmt.Errorf("load: the stream ended with %d of %d bytes moved", s.Moved(), n)
		case <-tick.C:
		}
	}
}

// Stop ends the stream and waits for its goroutine. It returns what cut
// the stream short, if anything (nil when it ended because asked, or its
// granted time was up, or before Start).
func (s *Stream) Stop() error {
	s.once.Do(func() {
		s.mu.Lock()
		s.stopped = true
		c, done := s.conn, s.done
		s.mu.Unlock()
		if s.up.Load() {
			s.acked.read() // the last count, while the socket is open
			// What the send buffer still holds is dropped, not sent
			// after the stream's end (a reset, not a FIN behind it):
			// else it would keep the bottleneck's queue full into the
			// next phase.
			if tc, ok := c.(*net.TCPConn); ok {
				_ = tc.SetLinger(0)
			}
		}
		c.Close()
		if done != nil {
			<-done
		}
	})
	if done := s.Done(); done != nil {
		<-done
		return s.err
	}
	return nil
}
