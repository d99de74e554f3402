package underload

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/volley-net/volley/internal/client"
	"github.com/volley-net/volley/internal/load"
	"github.com/volley-net/volley/internal/result"
	"github.com/volley-net/volley/internal/server"
	"github.com/volley-net/volley/internal/transport"
	"github.com/volley-net/volley/internal/tstamp"
)

// runLoopback runs --load down:2 in phases of a second against an
// in-process reflector that serves load (withLoad) or not.
func runLoopback(t *testing.T, withLoad bool) (*result.Result, error) {
	t.Helper()
	ctx := context.Background()
	var opts []server.LoopbackOption
	if withLoad {
		opts = append(opts, server.LoopbackLoad())
	}
	addr, stop, err := server.Loopback(ctx, tstamp.User, opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	target, err := transport.ParseTarget(addr)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := transport.Dial(ctx, target)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	lc := Config{Directions: []load.Direction{load.Down}, Streams: 2, Phase: time.Second,
		Dialer: load.Dialer{Network: "tcp", Address: target.Address()}}
	cfg := client.Config{Rate: 100, ReportInterval: lc.Phase, Duration: 3 * lc.Phase, Stamps: tstamp.User, Timeout: client.DefaultTimeout}
	return Run(ctx, lc, cfg, conn)
}

// TestRunPhases: the streams run in the loaded phase only, and every
// phase has its probes.
func TestRunPhases(t *testing.T) {
	res, err := runLoopback(t, true)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	l := res.Load
	if l == nil || len(l.Phases) != phases {
		t.Fatalf("load = %+v, want %d phases", l, phases)
	}
	for i, p := range l.Phases {
		if p.Probes.Counts.Received == 0 {
			t.Errorf("phase %s: no replies", p.Name)
		}
		if (p.BytesDown > 0) != (i == phaseLoaded) || (p.Streams > 0) != (i == phaseLoaded) {
			t.Errorf("phase %s: %d bytes down, %d streams; want bulk data in the loaded phase only", p.Name, p.BytesDown, p.Streams)
		}
	}
	if got := l.Phases[phaseLoaded].Streams; got != 2 {
		t.Errorf("loaded phase granted %d streams, want 2", got)
	}
	if l.Responsiveness == nil || l.Responsiveness.Samples == 0 {
		t.Errorf("no score: %+v", l.Responsiveness)
	}
}

// TestRunUnreachable: where the reflector takes no stream connection (this
// in-process one listens on UDP only), the run fails before its first
// probe, naming where the streams would have gone. (A refusal at the
// loaded phase, with the idle phase reported, is e2e's TestLoadRefused.)
func TestRunUnreachable(t *testing.T) {
	res, err := runLoopback(t, false)
	if err == nil || !strings.Contains(err.Error(), "--load: open a bulk stream to tcp 127.0.0.1:") {
		t.Fatalf("Run error = %v, want the stream's dial named", err)
	}
	if res != nil {
		t.Errorf("result = %+v, want none: nothing was measured", res)
	}
}
