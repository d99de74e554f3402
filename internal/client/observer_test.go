package client

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/volley-net/volley/internal/testconn"
)

// countReplies is an Observer that keeps what it heard.
type countReplies struct {
	n, oneWay, ipdv int
	minRTT, maxRTT  time.Duration
}

func (c *countReplies) Reply(r Reply) {
	c.n++
	if r.OneWay {
		c.oneWay++
	}
	if r.HasIPDV {
		c.ipdv++
	}
	if c.minRTT == 0 || r.RTT < c.minRTT {
		c.minRTT = r.RTT
	}
	c.maxRTT = max(c.maxRTT, r.RTT)
}

func TestObserver(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := testconn.New(t)
		c.Delay = 100 * time.Microsecond
		c.DropUp = func(seq uint64) bool { return seq%10 == 0 }
		o := &countReplies{}
		res, err := Run(context.Background(), Config{Count: 200, WarmupCount: 5, Timeout: 50 * time.Millisecond, Observer: o}, c)
		if err != nil {
			t.Fatalf("Run = %v, want no error", err)
		}
		sum := res.Summary
		if uint64(o.n) != sum.Counts.Received || sum.Counts.Lost == 0 {
			t.Fatalf("observer heard %d replies, want the %d received (of %d sent, %d lost)", o.n, sum.Counts.Received, sum.Counts.Sent, sum.Counts.Lost)
		}
		if o.oneWay != o.n || o.minRTT != 2*c.Delay || o.maxRTT != 2*c.Delay {
			t.Fatalf("heard %d with one-way figures of %d, RTT %v to %v; want all, each %v", o.oneWay, o.n, o.minRTT, o.maxRTT, 2*c.Delay)
		}
		// Every probe after a lost one has no IPDV: 20 lost of 200.
		if want := o.n - int(sum.Counts.Lost) - 1; o.ipdv < want-1 || o.ipdv > want+1 {
			t.Fatalf("heard %d replies with IPDV, want about %d (those whose previous probe came back)", o.ipdv, want)
		}
	})
}

// TestObserverAllocs: a probe's whole path, send to reply recorded,
// allocates nothing with an Observer listening.
func TestObserverAllocs(t *testing.T) {
	o := &countReplies{}
	_, probe := measuringRun(t, Config{Count: 1, history: 4096, Observer: o})
	probe() // the first interval's histograms are made
	if allocs := testing.AllocsPerRun(200, probe); allocs != 0 {
		t.Fatalf("a probe with an Observer allocated %.1f times, want none", allocs)
	}
	if o.n < 200 {
		t.Fatalf("the Observer heard %d replies, want every one of the 200+", o.n)
	}
}

// TestShared: an open-loop run that shares its process paces on the
// runtime's timers and still sends every probe on schedule.
func TestShared(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := testconn.New(t)
		c.Delay = 100 * time.Microsecond
		res, err := Run(context.Background(), Config{Count: 100, Rate: 1000, Shared: true}, c)
		if err != nil {
			t.Fatalf("Run = %v, want no error", err)
		}
		if got := res.Summary.Counts; got.Sent != 100 || got.Received != 100 {
			t.Fatalf("sent %d, received %d; want 100 and 100", got.Sent, got.Received)
		}
		if res.Summary.SendError == nil {
			t.Fatal("no send error in the summary, want the sender's, as any open-loop run's")
		}
	})
}
