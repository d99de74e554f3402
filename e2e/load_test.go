package e2e

import (
	"fmt"
	"strings"
	"testing"

	"github.com/volley-net/volley/internal/result"
)

// TestLoadLoopback: with no target, --load runs its three phases against
// the in-process reflector, bulk streams each way in the loaded phase
// only, and reports each phase, the goodput and the score.
func TestLoadLoopback(t *testing.T) {
	r := volleyRun(t, "client", "--load", "both:2", "--phase", "1s", "--format", "json")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	res := parseResult(t, r.stdout)
	l := res.Load
	if l == nil || l.Direction != "both" || l.Streams != 2 || len(l.Phases) != 3 {
		t.Fatalf("load = %+v, want both, 2 streams, 3 phases", l)
	}
	for i, p := range l.Phases {
		if p.Probes.Counts.Received == 0 {
			t.Errorf("phase %s: no probe came back", p.Name)
		}
		moved := p.BytesUp > 0 && p.BytesDown > 0
		if moved != (i == 1) || p.Loaded != (i == 1) {
			t.Errorf("phase %d %s: loaded %v, bytes up %d, down %d; want bulk data in the loaded phase only", i, p.Name, p.Loaded, p.BytesUp, p.BytesDown)
		}
	}
	if got := l.Phases[1].Streams; got != 4 {
		t.Errorf("loaded phase ran %d streams, want 4 (2 each way)", got)
	}
	if l.Phases[1].Added == nil || len(l.Phases[1].Added.Up) == 0 {
		t.Errorf("loaded phase has no added delays: %+v", l.Phases[1].Added)
	}
	if l.Responsiveness == nil || l.Responsiveness.RPM <= 0 || l.Responsiveness.Samples == 0 {
		t.Errorf("responsiveness = %+v, want a score from the loaded phase's round trips", l.Responsiveness)
	}
	if len(l.Series) == 0 || !seriesMoved(l.Series) {
		t.Errorf("goodput series has no point with data: %d points", len(l.Series))
	}
}

// seriesMoved says whether some point of s has goodput both ways.
func seriesMoved(s []result.LoadPoint) bool {
	for _, p := range s {
		if p.BitsPerSecUp > 0 && p.BitsPerSecDown > 0 {
			return true
		}
	}
	return false
}

// TestLoadRefused: a reflector without --allow-load refuses the bulk
// streams; the client says why before its first probe, and exits 2, as
// for a reflector it cannot reach.
func TestLoadRefused(t *testing.T) {
	s := startServer(t, "127.0.0.1:0")
	r := volleyRun(t, "client", s.addr, "--load", "down:1", "--phase", "1s")
	if r.code != 2 {
		t.Fatalf("exit %d against a reflector without --allow-load, want 2:\n%s%s", r.code, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stderr, "refused by the reflector") || !strings.Contains(r.stderr, "--allow-load") {
		t.Errorf("stderr does not say the reflector refused, serving no load (--allow-load): %q", r.stderr)
	}
	if strings.Contains(r.stdout, "summary") {
		t.Errorf("a report of a run that never started:\n%s", r.stdout)
	}
}

// TestLoadTCPProbes: the probes may go over TCP, beside the bulk streams
// on the same listener.
func TestLoadTCPProbes(t *testing.T) {
	s := startServer(t, "127.0.0.1:0", "--allow-load")
	r := volleyRun(t, "client", fmt.Sprintf("tcp://%s", s.addr), "--load", "up:1", "--phase", "1s", "--format", "json")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	l := parseResult(t, r.stdout).Load
	if l == nil || len(l.Phases) != 3 || l.Phases[1].BytesUp == 0 || l.Phases[1].Streams != 1 {
		t.Fatalf("load = %+v, want an upload in the loaded phase", l)
	}
}
