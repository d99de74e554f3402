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
	s, err := (&Dialer{Network: "tcp", Address: a, Timeout: 100 * time.Millisecond}).Dial(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(t.Context(), Down, time.Minute); err != nil {
		t.Fatal(err)
	}
	<-s.Done()
	if err := s.Stop(); err == nil || !strings.Contains(err.Error(), "no progress") {
		t.Fatalf("Stop of a download nothing came on = %v, want no progress", err)
	}

	b, _ := fakeReflector(t, nil, func(wire.Header) *wire.Header { return nil }, func(net.Conn) { <-hold })
	s, err = (&Dialer{Network: "tcp", Address: b, Timeout: 100 * time.Millisecond}).Dial(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
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
	for s.Moved() < 1<<20 {
		time.Sleep(time.Millisecond)
	}
	if err := s.Stop(); err != nil {
		t.Fatalf("Stop = %v, want nil", err)
	}
	if m, w := s.Moved(), s.moved.Load(); m == 0 || m > w {
		t.Fatalf("Moved() = %d with %d written, want 1 to the bytes written", m, w)
	}
}
