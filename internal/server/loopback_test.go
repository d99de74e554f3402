package server

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/volley-net/volley/internal/load"
	"github.com/volley-net/volley/internal/tstamp"
)

// TestLoopbackLoad: with LoopbackLoad, the loopback reflector serves load
// streams over TCP on its UDP port.
func TestLoopbackLoad(t *testing.T) {
	target, stop, err := Loopback(t.Context(), tstamp.User, LoopbackLoad())
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	addr, ok := strings.CutPrefix(target, "udp://")
	if !ok {
		t.Fatalf("target %q, want udp://", target)
	}
	for _, dir := range []load.Direction{load.Down, load.Up} {
		s, err := (&load.Dialer{Network: "tcp", Address: addr}).Dial(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Start(t.Context(), dir, time.Minute); err != nil {
			t.Fatalf("%s: %v", dir, err)
		}
		waitMoved(t, s)
		if err := s.Stop(); err != nil {
			t.Fatalf("%s: Stop = %v", dir, err)
		}
	}
}

// waitMoved waits until s moved a byte, failing the test when the
// stream ends first or nothing comes within 10 s.
func waitMoved(t *testing.T, s *load.Stream) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if err := s.WaitMoved(ctx, 1); err != nil {
		t.Fatal(err)
	}
}
