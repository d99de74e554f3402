package e2e

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/volley-net/volley/internal/load"
	"github.com/volley-net/volley/internal/wire"
)

// TestLoadServer runs `volley server --allow-load` and asks it for load
// streams as a client's --load does: granted with the key, within the
// rate and the per-source bound, refused without the key or beyond the
// bound; the server stops at once with streams running. A server without
// --allow-load refuses them.
func TestLoadServer(t *testing.T) {
	keyFile := filepath.Join(t.TempDir(), "key")
	if err := os.WriteFile(keyFile, []byte("load key\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	srv := startServer(t, "127.0.0.1:0", "-q", "--key-file", keyFile, "--allow-load", "--max-load-rate", "80M")
	keyed := &load.Dialer{Network: "tcp", Address: srv.addr, Key: []byte("load key")}
	var r *load.Refused
	if _, err := (&load.Dialer{Network: "tcp", Address: srv.addr}).Dial(t.Context()); !errors.As(err, &r) || r.Code != wire.ErrorAuth {
		t.Fatalf("Dial without the key = %v, want ErrorAuth", err)
	}
	var streams []*load.Stream
	defer func() {
		for _, s := range streams {
			s.Stop()
		}
	}()
	for i := range load.MaxStreamsPerSource {
		s, err := keyed.Dial(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		streams = append(streams, s)
		dir := load.Down
		if i%2 == 1 {
			dir = load.Up
		}
		if err := s.Start(t.Context(), dir, time.Minute); err != nil {
			t.Fatalf("stream %d: %v", i+1, err)
		}
		if _, rate := s.Granted(); rate != 80e6 {
			t.Fatalf("the LoadAck's rate cap = %d, want 80M", rate)
		}
	}
	s, err := keyed.Dial(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	streams = append(streams, s)
	if err := s.Start(t.Context(), load.Down, time.Minute); !errors.As(err, &r) || r.Code != wire.ErrorLoadStreams {
		t.Fatalf("stream %d of one source = %v, want ErrorLoadStreams", load.MaxStreamsPerSource+1, err)
	}
	for _, s := range streams[:2] {
		waitMoved(t, s)
	}
	// The server ends with its streams running, and the streams say
	// the reflector ended them.
	if err := srv.stop(t, os.Interrupt); err != nil {
		t.Fatalf("server with load streams running: %v, want exit 0", err)
	}
	<-streams[0].Done()
	if err := streams[0].Stop(); err == nil {
		t.Errorf("a download the reflector ended early: Stop = nil, want the reason")
	}
	// Its totals say what the load streams did: 16 served, one refused
	// (a load-streams drop), the bytes sent.
	out := srv.output()
	if !regexp.MustCompile(`(?m)^--- load totals: streams served 16, refused 1, sent [1-9]\S*B, received \S+B$`).MatchString(out) ||
		!strings.Contains(out, "load-streams 1") {
		t.Errorf("the server's totals lack the load totals (16 served, 1 refused, bytes sent) or the load-streams drop:\n%s", out)
	}

	off := startServer(t, "127.0.0.1:0", "-q")
	s, err = (&load.Dialer{Network: "tcp", Address: off.addr}).Dial(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	if err := s.Start(t.Context(), load.Up, time.Second); !errors.As(err, &r) || r.Code != wire.ErrorLoad {
		t.Fatalf("Start at a server without --allow-load = %v, want ErrorLoad", err)
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
