package load

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/volley-net/volley/internal/wire"
)

// fakeReflector answers one connection's Hello and TypeLoad as answer
// says (nil: no answer), then runs then on the connection. It returns the
// address and a channel with the TypeLoad it got.
func fakeReflector(t *testing.T, key []byte, answer func(load wire.Header) *wire.Header, then func(c net.Conn)) (string, <-chan wire.Header) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	loads := make(chan wire.Header, 1)
	done := make(chan struct{})
	t.Cleanup(func() { ln.Close(); <-done })
	var signer *wire.Signer
	if key != nil {
		signer = wire.NewSigner(key)
	}
	go func() {
		defer close(done)
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(10 * time.Second))
		read := func() (wire.Header, bool) {
			var hdr [4]byte
			if _, err := io.ReadFull(c, hdr[:]); err != nil {
				return wire.Header{}, false
			}
			b := make([]byte, binary.BigEndian.Uint32(hdr[:]))
			if _, err := io.ReadFull(c, b); err != nil {
				return wire.Header{}, false
			}
			var h wire.Header
			if h.Decode(b) != nil || (signer != nil && signer.Verify(b) != nil) {
				return wire.Header{}, false
			}
			return h, true
		}
		write := func(h *wire.Header) {
			// Refusals unsigned, as a reflector's to a Hello.
			n, s := wire.HeaderLen, signer
			if s != nil && h.Type != wire.TypeError {
				n += wire.TagLen
			} else {
				s = nil
			}
			b := make([]byte, 4+n)
			binary.BigEndian.PutUint32(b, uint32(n))
			h.Seal(b[4:], s)
			_, _ = c.Write(b)
		}
		hello, ok := read()
		if !ok || hello.Type != wire.TypeHello {
			return
		}
		write(&wire.Header{Type: wire.TypeCookie, Token: 0x70c, Seq: hello.Seq})
		l, ok := read()
		if !ok {
			return
		}
		loads <- l
		if a := answer(l); a != nil {
			write(a)
		}
		_ = c.SetDeadline(time.Time{})
		then(c)
	}()
	return ln.Addr().String(), loads
}

func grantAll(l wire.Header) *wire.Header {
	return &wire.Header{Type: wire.TypeLoadAck, Token: l.Token, Seq: l.Seq, HoldMicro: l.HoldMicro, RateLimit: 1e9}
}

// TestClientStart: what a stream sends, and a download that moves.
func TestClientStart(t *testing.T) {
	key := []byte("k")
	a, loads := fakeReflector(t, key, grantAll, func(c net.Conn) {
		for range 4 {
			_ = c.SetWriteDeadline(time.Now().Add(5 * time.Second))
			if _, err := c.Write(zeros[:]); err != nil {
				return
			}
		}
	})
	d := Dialer{Network: "tcp", Address: a, Key: key}
	s, err := d.Dial(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(t.Context(), Down, 3*time.Second); err != nil {
		t.Fatal(err)
	}
	l := <-loads
	if l.Type != wire.TypeLoad || l.Token != 0x70c || l.Nonce != s.nonce || l.HoldMicro != 3_000_000 ||
		l.Flags&wire.FlagLoadDown == 0 || l.Flags&wire.FlagAuth == 0 {
		t.Fatalf("the TypeLoad sent = %+v, want the cookie's token, the nonce, 3s, FlagLoadDown and FlagAuth", l)
	}
	if g, rate := s.Granted(); g != 3*time.Second || rate != 1e9 {
		t.Fatalf("Granted() = %v, %d; want 3s, 1e9", g, rate)
	}
	// The reflector closed long before the grant's end: an error.
	<-s.Done()
	if err := s.Stop(); err == nil || !strings.Contains(err.Error(), "ended the down stream") {
		t.Fatalf("Stop after the reflector closed early = %v, want it said", err)
	}
	if s.Moved() != 4*maxChunk {
		t.Fatalf("Moved() = %d, want %d", s.Moved(), 4*maxChunk)
	}
}

// TestClientRefused: a refusal is a *Refused with its code.
func TestClientRefused(t *testing.T) {
	a, _ := fakeReflector(t, nil, func(l wire.Header) *wire.Header {
		return &wire.Header{Type: wire.TypeError, Seq: l.Seq, Code: wire.ErrorLoad}
	}, func(net.Conn) {})
	s, err := (&Dialer{Network: "tcp", Address: a}).Dial(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	var r *Refused
	if err := s.Start(t.Context(), Up, time.Second); !errors.As(err, &r) || r.Code != wire.ErrorLoad ||
		r.Reason != wire.ErrorLoad.String() {
		t.Fatalf("Start = %v, want a *Refused with ErrorLoad", err)
	}
}

// TestClientSilentPeer: a reflector that grants and then neither sends
// nor closes, or never answers, ends the stream with an error within the
// timeout: never a hang.
func TestClientSilentPeer(t *testing.T) {
	hold := make(chan struct{})
	defer close(hold)
	a, _ := fakeReflector(t, nil, grantAll, func(net.Conn) { <-hold })
	// Dialed with the default timeout, so that a busy machine's handshake
	// passes; only the waits the test is about are short.
	s, err := (&Dialer{Network: "tcp", Address: a}).Dial(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	s.d.Timeout = 100 * time.Millisecond // the download's reads
	if err := s.Start(t.Context(), Down, time.Minute); err != nil {
		t.Fatal(err)
	}
	<-s.Done()
	if err := s.Stop(); err == nil || !strings.Contains(err.Error(), "no progress") {
		t.Fatalf("Stop of a download nothing came on = %v, want no progress", err)
	}

	b, _ := fakeReflector(t, nil, func(wire.Header) *wire.Header { return nil }, func(net.Conn) { <-hold })
	s, err = (&Dialer{Network: "tcp", Address: b}).Dial(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	s.d.Timeout = 100 * time.Millisecond // the wait for the LoadAck
	if err := s.Start(t.Context(), Down, time.Minute); err == nil || !strings.Contains(err.Error(), "no answer") {
		t.Fatalf("Start with no answer = %v, want no answer within the timeout", err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := (&Dialer{Network: "tcp", Address: b}).Dial(ctx); err == nil {
		t.Fatal("Dial with a done context succeeded")
	}
}

// TestClientUpStop: an upload moves until Stop, which returns nil, and
// Moved counts what was acknowledged (or written).
func TestClientUpStop(t *testing.T) {
	a, _ := fakeReflector(t, nil, grantAll, func(c net.Conn) { _, _ = io.Copy(io.Discard, c) })
	s, err := (&Dialer{Network: "tcp", Address: a}).Dial(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(t.Context(), Up, time.Minute); err != nil {
		t.Fatal(err)
	}
	waitMoved(t, s, 1<<20)
	if err := s.Stop(); err != nil {
		t.Fatalf("Stop = %v, want nil", err)
	}
	if m, w := s.Moved(), s.moved.Load(); m == 0 || m > w {
		t.Fatalf("Moved() = %d with %d written, want 1 to the bytes written", m, w)
	}
}

// waitMoved waits until s moved n bytes, failing the test when the
// stream ends first or nothing comes within 10 s.
func waitMoved(t *testing.T, s *Stream, n uint64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if err := s.WaitMoved(ctx, n); err != nil {
		t.Fatal(err)
	}
}

// TestClientStopDuringStart: a Stop while Start waits for the LoadAck, or
// while Start dials again, makes Start return ErrStopped and leaves
// nothing running: the connections closed, no mover (run with -race).
func TestClientStopDuringStart(t *testing.T) {
	t.Run("answer", func(t *testing.T) {
		asked, release := make(chan struct{}), make(chan struct{})
		a, _ := fakeReflector(t, nil, func(l wire.Header) *wire.Header {
			close(asked)
			<-release
			return grantAll(l)
		}, func(c net.Conn) {
			_ = c.SetWriteDeadline(time.Now().Add(10 * time.Second))
			_, _ = c.Write(zeros[:]) // fails, or is never read
		})
		defer close(release)
		s, err := (&Dialer{Network: "tcp", Address: a}).Dial(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		started := make(chan error, 1)
		go func() { started <- s.Start(t.Context(), Down, time.Minute) }()
		<-asked
		if err := s.Stop(); err != nil {
			t.Fatalf("Stop during Start = %v, want nil", err)
		}
		if err := <-started; !errors.Is(err, ErrStopped) {
			t.Fatalf("Start stopped while it waited = %v, want ErrStopped", err)
		}
		if s.Done() != nil {
			t.Fatal("a stream stopped before its grant has a mover")
		}
	})
	t.Run("redial", func(t *testing.T) {
		dialing, release := make(chan struct{}), make(chan struct{})
		var far net.Conn
		a, _ := fakeReflector(t, nil, grantAll, func(net.Conn) {})
		d := &Dialer{Network: "tcp", Address: a}
		s, err := d.Dial(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		// The redial gets a pipe, once Stop was called.
		s.d.Connect = func(context.Context, string, string) (net.Conn, error) {
			close(dialing)
			<-release
			near, f := net.Pipe()
			far = f
			return near, nil
		}
		s.mu.Lock()
		s.dialed = time.Now().Add(-redialAfter - time.Second)
		s.mu.Unlock()
		started := make(chan error, 1)
		go func() { started <- s.Start(t.Context(), Up, time.Minute) }()
		<-dialing
		if err := s.Stop(); err != nil {
			t.Fatalf("Stop during the redial = %v, want nil", err)
		}
		close(release)
		if err := <-started; !errors.Is(err, ErrStopped) {
			t.Fatalf("Start stopped while it dialed = %v, want ErrStopped", err)
		}
		// The connection dialed after Stop was closed: its far end reads
		// EOF at once.
		_ = far.SetReadDeadline(time.Now().Add(10 * time.Second))
		if _, err := far.Read(make([]byte, 1)); !errors.Is(err, io.EOF) {
			t.Fatalf("the far end of the redial reads %v, want EOF (closed)", err)
		}
		if s.Done() != nil {
			t.Fatal("a stream stopped during its redial has a mover")
		}
	})
}
