package client

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/volley-net/volley/internal/result"
	"github.com/volley-net/volley/internal/testconn"
)

func TestSamples(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := testconn.New(t)
		c.Delay = 100 * time.Microsecond
		c.DropUp = func(seq uint64) bool { return seq%10 == 0 }
		s := NewSamples(1000)
		res, err := Run(context.Background(), Config{Count: 200, WarmupCount: 5, Window: 2, Timeout: 50 * time.Millisecond, Samples: s}, c)
		if err != nil {
			t.Fatalf("Run = %v, want no error", err)
		}
		probes, complete := s.Probes()
		if !complete || len(probes) != int(res.Summary.Counts.Sent) {
			t.Fatalf("%d probes kept (complete %v), want the %d sent", len(probes), complete, res.Summary.Counts.Sent)
		}
		var lost uint64
		for i, p := range probes {
			if i > 0 && p.Sent < probes[i-1].Sent {
				t.Fatalf("probe %d left at %v, before the one kept before it (%v)", i, p.Sent, probes[i-1].Sent)
			}
			switch {
			case p.Lost:
				lost++
			case p.RTT != 2*c.Delay || p.Up+p.Down > p.RTT || p.Flow != 1 || p.Sent < 0:
				t.Fatalf("probe %d = %+v, want RTT %v, flow 1, up + down within it", i, p, 2*c.Delay)
			}
		}
		if lost != res.Summary.Counts.Lost || lost == 0 {
			t.Fatalf("%d probes kept as lost, want the %d counted", lost, res.Summary.Counts.Lost)
		}
	})
}

func TestSamplesLimit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := NewSamples(50)
		if _, err := Run(context.Background(), Config{Count: 200, Samples: s}, testconn.New(t)); err != nil {
			t.Fatalf("Run = %v, want no error", err)
		}
		if probes, complete := s.Probes(); complete || probes != nil {
			t.Fatalf("Probes = %d probes, complete %v; want none and not complete past the limit", len(probes), complete)
		}
	})
	f := NewSamples(100).flow(1, 1)
	if n := testing.AllocsPerRun(50, func() { f.add(result.Probe{RTT: 1}) }); n != 0 {
		t.Fatalf("keeping a probe allocated %v times, want 0", n)
	}
}
