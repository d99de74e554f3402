package client

import (
	"bytes"
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"net"
	"net/netip"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/volley-net/volley/internal/reflector"
	"github.com/volley-net/volley/internal/result"
	"github.com/volley-net/volley/internal/transport"
	"github.com/volley-net/volley/internal/tstamp"
	"github.com/volley-net/volley/internal/wire"
	"github.com/volley-net/volley/internal/workload"
)

// memConn is a transport.Conn wired straight to a reflector.Reflector, with
// a fixed one-way delay and drop rules on each direction.
type memConn struct {
	refl     *reflector.Reflector
	delay    time.Duration
	delayOf  func(seq uint64) time.Duration // the way up, when set
	dropUp   func(seq uint64) bool
	dropDown func(seq uint64) bool
	// dupUp: the reflector gets the probe twice (the copy 10µs later);
	// dupDown: the client gets the reply twice. delayDownOf, when set,
	// is the way down's delay of each reply.
	dupUp       func(seq uint64) bool
	dupDown     func(seq uint64) bool
	delayDownOf func(seq uint64) time.Duration
	dead        func() bool   // true: the reflector no longer answers
	shift       time.Duration // the reflector's clock is ahead of the client's by this

	mu       sync.Mutex
	deadline time.Time
	kick     chan struct{}
	in       chan []byte
}

var (
	memLocal  = &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 1111}
	memRemote = &net.UDPAddr{IP: net.IPv4(127, 0, 0, 2), Port: 7766}
)

func newMemConn(t *testing.T) *memConn {
	t.Helper()
	r, err := reflector.New(reflector.Config{})
	if err != nil {
		t.Fatal(err)
	}
	return &memConn{refl: r, kick: make(chan struct{}, 1), in: make(chan []byte, 1<<16)}
}

func (c *memConn) Write(b []byte) (int, error) {
	var h wire.Header
	if err := h.Decode(b); err != nil {
		return 0, err
	}
	if (c.dead != nil && c.dead()) || (h.Type == wire.TypeProbe && c.dropUp != nil && c.dropUp(h.Seq)) {
		return len(b), nil
	}
	pkt := make([]byte, len(b), 1<<16) // room for replies larger than the probe
	copy(pkt, b)
	up := c.delay
	if c.delayOf != nil && h.Type == wire.TypeProbe {
		up = c.delayOf(h.Seq)
	}
	if h.Type == wire.TypeProbe && c.dupUp != nil && c.dupUp(h.Seq) {
		c.arrive(append(make([]byte, 0, 1<<16), pkt...), up+10*time.Microsecond)
	}
	c.arrive(pkt, up)
	return len(b), nil
}

// arrive hands pkt to the reflector after up, and its reply back.
func (c *memConn) arrive(pkt []byte, up time.Duration) {
	time.AfterFunc(up, func() {
		c.mu.Lock()
		reply := c.refl.Handle(pkt, netip.MustParseAddrPort("127.0.0.1:1111"), time.Now().UnixNano()+int64(c.shift))
		if due := c.refl.NextDue(); due != 0 && reply == nil {
			// A held reply: let the reflector send it when due.
			time.AfterFunc(time.Until(time.Unix(0, due)), func() {
				c.mu.Lock()
				defer c.mu.Unlock()
				c.refl.Due(time.Now().UnixNano(), func(b []byte, _ netip.AddrPort) {
					out := append([]byte(nil), b...)
					time.AfterFunc(c.delay, func() { c.in <- out })
				})
			})
		}
		c.mu.Unlock()
		if reply == nil {
			return
		}
		var rh wire.Header
		_ = rh.Decode(reply)
		if rh.Type == wire.TypeReply && c.dropDown != nil && c.dropDown(rh.Seq) {
			return
		}
		down := c.delay
		if rh.Type == wire.TypeReply && c.delayDownOf != nil {
			down = c.delayDownOf(rh.Seq)
		}
		copies := 1
		if rh.Type == wire.TypeReply && c.dupDown != nil && c.dupDown(rh.Seq) {
			copies = 2
		}
		time.AfterFunc(down, func() {
			for range copies {
				c.in <- reply
			}
		})
	})
}

func (c *memConn) Read(b []byte) (int, error) {
	for {
		c.mu.Lock()
		d := c.deadline
		c.mu.Unlock()
		var timeout <-chan time.Time
		if !d.IsZero() {
			wait := time.Until(d)
			if wait <= 0 {
				return 0, os.ErrDeadlineExceeded
			}
			t := time.NewTimer(wait)
			defer t.Stop()
			timeout = t.C
		}
		select {
		case p := <-c.in:
			return copy(b, p), nil
		case <-timeout:
			return 0, os.ErrDeadlineExceeded
		case <-c.kick:
		}
	}
}

func (c *memConn) SetReadDeadline(t time.Time) error {
	c.mu.Lock()
	c.deadline = t
	c.mu.Unlock()
	select {
	case c.kick <- struct{}{}:
	default:
	}
	return nil
}

// restart replaces the reflector with a new one, as a restarted process:
// it knows none of the old sessions.
func (c *memConn) restart(t *testing.T) {
	r, err := reflector.New(reflector.Config{})
	if err != nil {
		t.Error(err)
		return
	}
	c.mu.Lock()
	c.refl = r
	c.mu.Unlock()
}

func (c *memConn) LocalAddr() net.Addr  { return memLocal }
func (c *memConn) RemoteAddr() net.Addr { return memRemote }
func (c *memConn) Close() error         { return nil }

var _ transport.Conn = (*memConn)(nil)

func checkTotals(t *testing.T, res *result.Result) {
	t.Helper()
	c := res.Summary.Counts
	if c.Sent != c.Received+c.Lost || c.Lost != c.LostUp+c.LostDown {
		t.Errorf("summary counts %+v: want sent = received + lost and lost = up + down", c)
	}
	var sent, recv, lost uint64
	for _, iv := range res.Intervals {
		sent += iv.Counts.Sent
		recv += iv.Counts.Received
		lost += iv.Counts.Lost
	}
	if len(res.Intervals) > 0 && (sent != c.Sent || recv != c.Received || lost != c.Lost) {
		t.Errorf("intervals add up to sent %d received %d lost %d, summary has %d %d %d", sent, recv, lost, c.Sent, c.Received, c.Lost)
	}
	if res.Summary.RTT.Count != int64(c.Received) {
		t.Errorf("RTT count %d, want one per received probe (%d)", res.Summary.RTT.Count, c.Received)
	}
}

func TestLossPerDirection(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newMemConn(t)
		c.delay = 100 * time.Microsecond
		c.dropUp = func(seq uint64) bool { return seq%5 == 0 }
		c.dropDown = func(seq uint64) bool { return seq%7 == 0 }
		const n = 100
		cfg := Config{Count: n, WarmupCount: 10, Window: 4, Timeout: 50 * time.Millisecond}
		res, err := Run(context.Background(), cfg, c)
		if err != nil {
			t.Fatal(err)
		}
		var up, down uint64
		for seq := uint64(11); seq <= 10+n; seq++ {
			switch {
			case seq%5 == 0:
				up++
			case seq%7 == 0:
				down++
			}
		}
		got := res.Summary.Counts
		if got.Sent != n || got.LostUp != up || got.LostDown != down || got.Received != n-up-down {
			t.Fatalf("counts = %+v, want sent %d, lost up %d, down %d", got, n, up, down)
		}
		if res.ReflectorCount != "close" || res.Stopped != "count" {
			t.Fatalf("reflector count from %q, stopped by %q; want close, count", res.ReflectorCount, res.Stopped)
		}
		checkTotals(t, res)
		// Every received probe took the two delays exactly (the fake clock
		// does not move while code runs).
		if res.Summary.RTT.Min != 2*c.delay || res.Summary.RTT.Max != 2*c.delay || res.Summary.Up.Max != c.delay {
			t.Fatalf("RTT %+v, up %+v: want %v and %v exactly", res.Summary.RTT, res.Summary.Up, 2*c.delay, c.delay)
		}
	})
}

func TestIntervals(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newMemConn(t)
		c.delay = 250 * time.Microsecond
		var seen []result.Interval
		cfg := Config{Duration: 3 * time.Second, WarmupDuration: 100 * time.Millisecond, Handler: funcs{interval: func(iv result.Interval) { seen = append(seen, iv) }}}
		res, err := Run(context.Background(), cfg, c)
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Intervals) != 3 || len(seen) != 3 {
			t.Fatalf("%d intervals (%d handed over), want 3", len(res.Intervals), len(seen))
		}
		for i, iv := range res.Intervals {
			if iv.Start != time.Duration(i)*time.Second || iv.Counts.Sent != 2000 {
				t.Errorf("interval %d starts %v with %d sent, want %v and 2000 (one per 500µs)", i, iv.Start, iv.Counts.Sent, time.Duration(i)*time.Second)
			}
		}
		if got := res.Summary.Throughput.ProbesPerSecUp; got < 1999 || got > 2001 {
			t.Errorf("probes/s up = %v, want 2000", got)
		}
		if res.Summary.Counts.Lost != 0 || res.Summary.IPDV.RTT.Count != 5999 || res.Summary.IPDV.RTT.Max != 0 {
			t.Errorf("summary %+v, IPDV %+v: want no loss and 5999 zero IPDV samples", res.Summary.Counts, res.Summary.IPDV.RTT)
		}
		checkTotals(t, res)
	})
}

// TestLastIntervalEndsWithSending: the last interval ends where sending
// ended, as the summary does, not when the run's wind-down (here a lost
// last probe's timeout) did; its rate is over its own span.
func TestLastIntervalEndsWithSending(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newMemConn(t)
		c.delay = 100 * time.Microsecond
		c.dropDown = func(seq uint64) bool { return seq == 500 } // the last
		cfg := Config{Rate: 1000, Duration: 500 * time.Millisecond, ReportInterval: 100 * time.Millisecond,
			Timeout: 300 * time.Millisecond, sleep: time.Sleep}
		res, err := Run(context.Background(), cfg, c)
		if err != nil {
			t.Fatal(err)
		}
		last := res.Intervals[len(res.Intervals)-1]
		if last.End != res.Summary.End || last.End != cfg.Duration {
			t.Fatalf("last interval %v-%v, summary ends %v: want both to end at %v", last.Start, last.End, res.Summary.End, cfg.Duration)
		}
		if got := last.Throughput.ProbesPerSecUp; got < 999 || got > 1001 {
			t.Errorf("last interval's rate %v probes/s, want 1000", got)
		}
		checkTotals(t, res)
	})
}

func TestSilentReflector(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newMemConn(t)
		c.delay = time.Millisecond
		var probes int
		c.dropUp = func(uint64) bool { probes++; return probes > 50 }
		start := time.Now()
		res, err := Run(context.Background(), Config{Duration: time.Minute, Timeout: 200 * time.Millisecond}, c)
		if !errors.Is(err, ErrSilent) {
			t.Fatalf("Run = %v, want ErrSilent", err)
		}
		if took := time.Since(start); took > 5*time.Second {
			t.Errorf("silence noticed after %v, want about 3s", took)
		}
		got := res.Summary.Counts
		if res == nil || got.Received != 50 || got.LostUp != got.Lost || res.Stopped != "reflector-silent" {
			t.Fatalf("partial result %+v stopped %q, want 50 received, every loss up", got, res.Stopped)
		}
		checkTotals(t, res)
	})
}

func TestNoReflector(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newMemConn(t)
		c.dead = func() bool { return true }
		res, err := Run(context.Background(), Config{Timeout: time.Second}, c)
		if !errors.Is(err, ErrNoReflector) || res != nil {
			t.Fatalf("Run = %v, %v, want ErrNoReflector and no result", res, err)
		}
		if want := "no reflector answered at udp://127.0.0.2:7766 after 3 tries over 3s"; err.Error() != want {
			t.Fatalf("error %q, want %q", err, want)
		}
	})
}

func TestInterrupt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newMemConn(t)
		c.delay = time.Millisecond
		ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
		defer cancel()
		res, err := Run(ctx, Config{Duration: time.Hour}, c)
		if err != nil {
			t.Fatal(err)
		}
		if res.Stopped != "interrupted" || res.ReflectorCount != "close" || res.Summary.Counts.Lost != 0 {
			t.Fatalf("stopped %q, count from %q, counts %+v: want interrupted, close, no loss", res.Stopped, res.ReflectorCount, res.Summary.Counts)
		}
		checkTotals(t, res)
	})
}

func TestConfigErrors(t *testing.T) {
	for _, cfg := range []Config{
		{Size: wire.HeaderLen - 1},
		{Size: MaxSize + 1},
		{Window: -1},
		{Window: MaxWindow + 1},
		{Duration: -time.Second},
		{Percentiles: []float64{101}},
		{Rate: 100, SendInterval: time.Millisecond},
		{Rate: -1},
		{Rate: MaxRate + 1},
		{Poisson: true},
		{Burst: 3, Rate: 10},
		{Period: time.Second},
	} {
		if _, err := Run(context.Background(), cfg, nil); !errors.Is(err, ErrConfig) {
			t.Errorf("Run(%+v) = %v, want ErrConfig", cfg, err)
		}
	}
}

// echoConn answers each write at once through a reflector, for measuring
// the client's own per-probe path.
type echoConn struct {
	memConn
	pending []byte
	n       int
}

func (c *echoConn) Write(b []byte) (int, error) {
	copy(c.pending, b)
	// The time must move: the reflector's rate limit refills with it.
	reply := c.refl.Handle(c.pending[:len(b)], netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 0, 0, 1}), 1111), time.Now().UnixNano())
	c.n = len(reply)
	return len(b), nil
}

func (c *echoConn) Read(b []byte) (int, error) { return copy(b, c.pending[:c.n]), nil }

func BenchmarkProbePath(b *testing.B) {
	// In memory a session sends faster than a reflector lets one by
	// default.
	refl, err := reflector.New(reflector.Config{MaxRate: 1e12})
	if err != nil {
		b.Fatal(err)
	}
	conn := &echoConn{memConn: memConn{refl: refl}, pending: make([]byte, 2048)}
	cfg, err := Config{Count: 1, history: 4096}.withDefaults()
	if err != nil {
		b.Fatal(err)
	}
	r := newRun(cfg, conn)
	r.res = &result.Result{}
	// Open the session.
	hello := wire.Header{Type: wire.TypeHello, Seq: 1}
	_ = hello.Encode(r.buf)
	conn.Write(r.buf)
	var h wire.Header
	n, _ := conn.Read(r.rbuf)
	_ = h.Decode(r.rbuf[:n])
	r.token, r.nonce = h.Token, 1
	r.segs = []segment{{token: h.Token, nonce: 1, first: 1}}
	r.startMeasuring(r.clk.Now())
	b.ReportAllocs()
	for b.Loop() {
		if err := r.send(); err != nil {
			b.Fatal(err)
		}
		n, _ := conn.Read(r.rbuf)
		if err := h.Decode(r.rbuf[:n]); err != nil {
			b.Fatal(err)
		}
		r.reply(&h, n, r.clk.Now(), 0, r.rbuf[:n], tstamp.Stamp{})
	}
	if got := r.cur.counts.Received; got != r.cur.counts.Sent || got == 0 {
		b.Fatalf("received %d of %d", got, r.cur.counts.Sent)
	}
}

func TestHistoryWrap(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newMemConn(t)
		c.delay = time.Millisecond
		c.dropUp = func(seq uint64) bool { return seq == 5 }
		// Probe 5 waits for a reply that never comes while the other
		// window slot carries many more probes than the history holds.
		cfg := Config{Count: 1000, Window: 2, Timeout: time.Hour, history: 64}
		res, err := Run(context.Background(), cfg, c)
		if err != nil {
			t.Fatal(err)
		}
		got := res.Summary.Counts
		if got.Sent != 1000 || got.Received != 999 || got.Lost != 1 || got.LostUp != 1 {
			t.Fatalf("counts %+v, want 999 received and the one probe lost on the way up", got)
		}
		checkTotals(t, res)
	})
}

func TestOpenLoopRate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newMemConn(t)
		c.delay = 100 * time.Microsecond
		cfg := Config{Rate: 1000, Duration: 2 * time.Second, WarmupCount: 20, sleep: time.Sleep}
		res, err := Run(context.Background(), cfg, c)
		if err != nil {
			t.Fatal(err)
		}
		s := res.Summary
		if s.Counts.Sent != 2000 || s.Counts.Received != 2000 || res.Stopped != "duration" || res.ReflectorCount != "close" {
			t.Fatalf("counts %+v, stopped %q, count from %q: want 2000 sent and received, duration, close", s.Counts, res.Stopped, res.ReflectorCount)
		}
		if len(res.Intervals) != 2 || res.Intervals[0].Counts.Sent != 1000 {
			t.Fatalf("%d intervals, first sent %d: want 2 of 1000", len(res.Intervals), res.Intervals[0].Counts.Sent)
		}
		if s.SendError == nil || s.SendError.Max != 0 || s.RTTFromSchedule.Max != 2*c.delay || s.RTT.Max != 2*c.delay {
			t.Fatalf("send error %+v, RTT from schedule %+v: want exact sends and %v", s.SendError, s.RTTFromSchedule, 2*c.delay)
		}
		checkTotals(t, res)
	})
}

// A rate whose next slot lies past the end of the run ends the run at its
// duration, not at that slot: --rate 0.01 -t 1s is one probe and one
// second, not a hundred.
func TestOpenLoopSlowRateEndsOnTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newMemConn(t)
		cfg := Config{Rate: 0.01, Duration: time.Second, Timeout: 100 * time.Millisecond, sleep: time.Sleep}
		start := time.Now()
		res, err := Run(context.Background(), cfg, c)
		if err != nil {
			t.Fatal(err)
		}
		took := time.Since(start) // fake time: exact
		if res.Stopped != "duration" || res.Summary.Counts.Sent != 1 || took > 5*time.Second {
			t.Fatalf("stopped %q, sent %d, run took %v: want duration, 1 probe, about 1s", res.Stopped, res.Summary.Counts.Sent, took)
		}
	})
}

func TestOpenLoopStallIsNotHidden(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newMemConn(t)
		c.delay = 100 * time.Microsecond
		sleeps := 0
		stall := 25 * time.Millisecond
		// The sender stalls once, 25ms, a quarter into the run.
		sleep := func(d time.Duration) {
			sleeps++
			if sleeps == 250 {
				d += stall
			}
			time.Sleep(d)
		}
		cfg := Config{Rate: 1000, Duration: time.Second, sleep: sleep, Poisson: false}
		res, err := Run(context.Background(), cfg, c)
		if err != nil {
			t.Fatal(err)
		}
		s := res.Summary
		// Slots more than 10ms (ten gaps) behind are skipped, the ten
		// behind less than that are sent at once, stamped with their slots.
		// (At 1000/s ten gaps exceed the 5ms floor.)
		if s.Counts.Skipped < 10 || s.Counts.Skipped > 16 {
			t.Errorf("skipped %d slots, want about 15", s.Counts.Skipped)
		}
		if s.Counts.Sent+s.Counts.Skipped != 1000 {
			t.Errorf("sent %d + skipped %d, want the schedule's 1000 slots", s.Counts.Sent, s.Counts.Skipped)
		}
		if s.SendError.Max < 9*time.Millisecond || s.RTTFromSchedule.Max < 9*time.Millisecond {
			t.Errorf("send error max %v, RTT from schedule max %v: the stall is hidden", s.SendError.Max, s.RTTFromSchedule.Max)
		}
		if s.RTT.Max != 2*c.delay {
			t.Errorf("RTT from the actual send max %v, want %v", s.RTT.Max, 2*c.delay)
		}
		checkTotals(t, res)
	})
}

func TestOpenLoopPoisson(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newMemConn(t)
		c.delay = 50 * time.Microsecond
		cfg := Config{Rate: 2000, Poisson: true, Seed: 1, Duration: 5 * time.Second, sleep: time.Sleep}
		res, err := Run(context.Background(), cfg, c)
		if err != nil {
			t.Fatal(err)
		}
		// 10000 expected; the count of a Poisson process has stdev 100.
		if got := res.Summary.Counts.Sent; got < 9500 || got > 10500 {
			t.Fatalf("sent %d in 5s at a mean of 2000/s", got)
		}
		if res.Config.Seed != 1 || !res.Config.Poisson {
			t.Fatalf("config %+v does not record the Poisson seed", res.Config)
		}
		checkTotals(t, res)
	})
}

func TestBursts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newMemConn(t)
		c.delay = time.Millisecond
		cfg := Config{Burst: 5, Period: 100 * time.Millisecond, Duration: time.Second}
		res, err := Run(context.Background(), cfg, c)
		if err != nil {
			t.Fatal(err)
		}
		got := res.Summary
		if got.Counts.Sent != 50 || got.Counts.Received != 50 {
			t.Fatalf("counts %+v, want 10 bursts of 5", got.Counts)
		}
		for i, iv := range res.Intervals {
			if iv.Counts.Sent%5 != 0 {
				t.Errorf("interval %d sent %d, not whole bursts", i, iv.Counts.Sent)
			}
		}
		if rps := got.Throughput.RequestsPerSec; rps < 49 || rps > 51 {
			t.Errorf("requests/s %v, want 50", rps)
		}
		checkTotals(t, res)
	})
}

func TestThreshold(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newMemConn(t)
		c.delay = 100 * time.Microsecond
		c.delayOf = func(seq uint64) time.Duration {
			if seq == 40 {
				return 2 * time.Millisecond
			}
			return 100 * time.Microsecond
		}
		res, err := Run(context.Background(), Config{Threshold: time.Millisecond, WarmupCount: 10, Duration: time.Minute}, c)
		if err != nil {
			t.Fatal(err)
		}
		hit := res.Threshold
		if res.Stopped != "threshold" || hit == nil || hit.Seq != 30 || hit.RTT != 2100*time.Microsecond {
			t.Fatalf("stopped %q, hit %+v: want probe 30 (seq 40 after 10 warm-up) with 2.1ms", res.Stopped, hit)
		}
		checkTotals(t, res)
	})
}

func TestOneWay(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newMemConn(t)
		c.delay = 300 * time.Microsecond
		c.dropUp = func(seq uint64) bool { return seq%10 == 0 }
		cfg := Config{OneWay: true, Rate: 1000, Duration: time.Second, sleep: time.Sleep, Histogram: 10}
		res, err := Run(context.Background(), cfg, c)
		if err != nil {
			t.Fatal(err)
		}
		s := res.Summary
		if s.Counts.Sent != 1000 || s.Counts.Received != 900 || s.Counts.LostUp != 100 || s.Counts.LostDown != 0 {
			t.Fatalf("counts %+v, want 1000 sent, 900 received, 100 lost on the way up", s.Counts)
		}
		if s.Up.Count != 900 || s.Up.Min != c.delay || s.Up.Max != c.delay || s.RTT.Count != 0 {
			t.Fatalf("up %+v, rtt count %d: want 900 delays of %v and no RTT", s.Up, s.RTT.Count, c.delay)
		}
		// One-way jitter, from the reflector: of the 900 that came, all
		// but the 100 after a gap follow the one before them, with the
		// same delay.
		if s.IPDV.Up.Count != 800 || s.IPDV.Up.Max != 0 || s.IPDV.RTT.Count != 0 {
			t.Fatalf("ipdv %+v: want 800 values of 0 up, and nothing else", s.IPDV)
		}
		if !res.Config.OneWay || res.Histogram == nil || res.Histogram.Of != "up" {
			t.Fatalf("config one-way %v, histogram %+v", res.Config.OneWay, res.Histogram)
		}
		// The client's intervals know only what it sent.
		var sent uint64
		for _, iv := range res.Intervals {
			sent += iv.Counts.Sent
		}
		if c := s.Counts; sent != c.Sent || c.Sent != c.Received+c.Lost {
			t.Fatalf("intervals sent %d, summary %+v", sent, c)
		}
	})
}

// TestOneWayLastBehindClose: the network delays the last one-way probe
// behind the Close; it arrived, so it is not lost.
func TestOneWayLastBehindClose(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newMemConn(t)
		c.delay = 300 * time.Microsecond
		c.delayOf = func(seq uint64) time.Duration {
			if seq == 1000 {
				return 5 * time.Millisecond // the Close, sent right after it, overtakes it
			}
			return c.delay
		}
		cfg := Config{OneWay: true, Rate: 1000, Duration: time.Second, sleep: time.Sleep}
		res, err := Run(context.Background(), cfg, c)
		if err != nil {
			t.Fatal(err)
		}
		if c := res.Summary.Counts; c.Sent != 1000 || c.Received != 1000 || c.Lost != 0 || c.LostUp != 0 {
			t.Fatalf("counts %+v, want all 1000 received: the last came after the Close, within the timeout", c)
		}
		if res.ReflectorCount != "close" {
			t.Fatalf("reflector count from %q, want close", res.ReflectorCount)
		}
	})
}

// TestOneWaySameClock: a one-way run's up delays are measured when the
// reflector reads the client's clock, and said to be; between two clocks
// nothing estimates the offset.
func TestOneWaySameClock(t *testing.T) {
	for _, id := range []uint64{0, 9} {
		synctest.Test(t, func(t *testing.T) {
			c := newMemConn(t)
			refl, err := reflector.New(reflector.Config{Clock: idClock{id}})
			if err != nil {
				t.Fatal(err)
			}
			c.refl, c.delay = refl, 300*time.Microsecond
			cfg := Config{OneWay: true, Rate: 1000, Count: 100, sleep: time.Sleep, Clock: idClock{id}}
			res, err := Run(context.Background(), cfg, c)
			if err != nil {
				t.Fatal(err)
			}
			co := res.ClockOffset
			if id == 0 && co != nil {
				t.Fatalf("clock offset %+v between clocks without identity: want none", co)
			}
			if id != 0 && (co == nil || co.Method != "same-clock" || co.Offset != 0) {
				t.Fatalf("clock offset %+v on one clock: want same-clock, offset 0", co)
			}
		})
	}
}

func TestOneWayNoResults(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newMemConn(t)
		c.delay = 300 * time.Microsecond
		var dead atomic.Bool // set by the receiver, read by the sender
		c.dead = dead.Load
		cfg := Config{OneWay: true, Rate: 100, Duration: time.Second, sleep: time.Sleep, ReportInterval: 500 * time.Millisecond,
			Handler: funcs{interval: func(result.Interval) { dead.Store(true) }}} // the reflector dies half way
		res, err := Run(context.Background(), cfg, c)
		if !errors.Is(err, ErrNoResults) || res == nil || res.Summary.Counts.Sent != 100 {
			t.Fatalf("Run = %v, sent %v; want ErrNoResults and the 100 sent", err, res)
		}
	})
}

func TestParallelFlows(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var conns []transport.Conn
		for i := 0; i < 3; i++ {
			c := newMemConn(t)
			c.delay = time.Duration(i+1) * 100 * time.Microsecond
			conns = append(conns, c)
		}
		var seen int
		cfg := Config{Duration: 2 * time.Second, ReportInterval: 500 * time.Millisecond, Handler: funcs{interval: func(result.Interval) { seen++ }}}
		res, err := RunFlows(context.Background(), cfg, conns)
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Flows) != 3 || res.Config.Parallel != 3 {
			t.Fatalf("%d flows, parallel %d, want 3", len(res.Flows), res.Config.Parallel)
		}
		var sent uint64
		for i, f := range res.Flows {
			// Ping-pong: one probe per round trip of 2×delay.
			rtt := time.Duration(i+1) * 200 * time.Microsecond
			want := uint64((2*time.Second + rtt - 1) / rtt) // a probe leaves at every multiple of rtt before 2s
			if f.Summary.Counts.Sent != want || f.Summary.Counts.Lost != 0 {
				t.Errorf("flow %d counts %+v, want %d sent", i, f.Summary.Counts, want)
			}
			sent += f.Summary.Counts.Sent
		}
		s := res.Summary
		if s.Counts.Sent != sent || s.RTT.Count != int64(sent) || s.RTT.Min != 200*time.Microsecond || s.RTT.Max != 600*time.Microsecond {
			t.Fatalf("total counts %+v, RTT %+v: want %d and the three flows' RTTs", s.Counts, s.RTT, sent)
		}
		if len(res.Intervals) != 4 || seen != 4 {
			t.Fatalf("%d total intervals (%d handed over), want 4", len(res.Intervals), seen)
		}
		checkTotals(t, res)
	})
}

func TestWorkload(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newMemConn(t)
		c.delay = 100 * time.Microsecond
		mix := []workload.Entry{
			{Name: "small", Weight: 1, Size: 100, ReplySize: 200},
			{Name: "held", Weight: 1, Size: 300, ReplySize: 64, Hold: workload.Duration(time.Millisecond)},
		}
		res, err := Run(context.Background(), Config{Workload: mix, Count: 400, Seed: 3}, c)
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Workload) != 2 {
			t.Fatalf("%d workload results, want 2", len(res.Workload))
		}
		small, held := res.Workload[0], res.Workload[1]
		if small.Sent+held.Sent != 400 || small.Sent < 150 || held.Sent < 150 || small.Received != small.Sent || held.Received != held.Sent {
			t.Fatalf("entries sent %d and %d, received %d and %d: want 400 split about evenly, all received", small.Sent, held.Sent, small.Received, held.Received)
		}
		if small.RTT.Max != 2*c.delay || held.RTT.Min != 2*c.delay+time.Millisecond || held.Response.Max != 0 {
			t.Fatalf("small RTT max %v, held RTT min %v response max %v: want %v, %v and the hold left out", small.RTT.Max, held.RTT.Min, held.Response.Max, 2*c.delay, 2*c.delay+time.Millisecond)
		}
		tp := res.Summary.Throughput
		if tp.BytesUp != 100*small.Sent+300*held.Sent || tp.BytesDown != 200*small.Received+64*held.Received {
			t.Fatalf("bytes up %d down %d do not match the mix", tp.BytesUp, tp.BytesDown)
		}
		if res.Config.Seed != 3 {
			t.Fatalf("seed %d not recorded", res.Config.Seed)
		}
		checkTotals(t, res)
	})
}

func TestWorkloadGap(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newMemConn(t)
		c.delay = 100 * time.Microsecond
		mix := []workload.Entry{{Weight: 1, Size: 64, Gap: workload.Duration(10 * time.Millisecond)}}
		res, err := Run(context.Background(), Config{Workload: mix, Duration: time.Second}, c)
		if err != nil {
			t.Fatal(err)
		}
		if got := res.Summary.Counts.Sent; got != 100 {
			t.Fatalf("sent %d in 1s with a 10ms gap, want 100", got)
		}
	})
}

// TestMain fails the package when a test leaves goroutines behind (an
// open-loop sender not waited for, a context watcher not stopped).
func TestMain(m *testing.M) {
	before := runtime.NumGoroutine()
	code := m.Run()
	if code == 0 {
		deadline := time.Now().Add(5 * time.Second)
		for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		if n := runtime.NumGoroutine(); n > before {
			buf := make([]byte, 1<<20)
			fmt.Fprintf(os.Stderr, "goroutines leaked: %d before the tests, %d after\n%s", before, n, buf[:runtime.Stack(buf, true)])
			code = 1
		}
	}
	os.Exit(code)
}

func TestOpenLoopInterruptedInWarmup(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newMemConn(t)
		c.delay = 100 * time.Microsecond
		ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		defer cancel()
		res, err := Run(ctx, Config{Rate: 100, WarmupDuration: time.Minute, Duration: time.Minute, sleep: time.Sleep}, c)
		if err != nil {
			t.Fatal(err)
		}
		s := res.Summary
		if res.Stopped != "interrupted" || s.Counts.Sent != 0 || s.End < 0 || s.End > time.Second {
			t.Fatalf("stopped %q, summary %v to %v with %+v: want an empty measurement", res.Stopped, s.Start, s.End, s.Counts)
		}
	})
}

// TestRestartEndsRun: without Reconnect, a reflector that restarts (and so
// answers "session unknown") ends the run at once, with partial results.
func TestRestartEndsRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newMemConn(t)
		c.delay = 100 * time.Microsecond
		var probes int
		c.dropUp = func(uint64) bool {
			if probes++; probes == 100 {
				c.restart(t)
			}
			return false
		}
		start := time.Now()
		res, err := Run(context.Background(), Config{Duration: time.Minute}, c)
		if !errors.Is(err, ErrRestarted) {
			t.Fatalf("Run = %v, want ErrRestarted", err)
		}
		if took := time.Since(start); took > time.Second {
			t.Errorf("restart noticed after %v, want at the first answer of the new reflector", took)
		}
		got := res.Summary.Counts
		if got.Sent != 100 || got.Received != 99 || got.LostUp != 1 || res.Stopped != "reflector-restarted" || res.ReflectorCount != "last-reply" || len(res.Reconnects) != 0 {
			t.Fatalf("partial result %+v stopped %q, count %q: want 99 of 100 received, the last lost up", got, res.Stopped, res.ReflectorCount)
		}
		checkTotals(t, res)
	})
}

// TestReconnect: with Reconnect, a closed-loop run whose reflector restarts
// loses the probes in flight, opens a new session and completes its count;
// the lost session's losses are all on the way up, which the estimate gets
// right here.
func TestReconnect(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newMemConn(t)
		c.delay = 100 * time.Microsecond
		var probes int
		c.dropUp = func(uint64) bool {
			if probes++; probes == 300 {
				c.restart(t)
			}
			return false
		}
		var events []result.Reconnect
		cfg := Config{Count: 1000, Window: 4, Reconnect: 10 * time.Second, Handler: funcs{reconnect: func(rc result.Reconnect) { events = append(events, rc) }}}
		res, err := Run(context.Background(), cfg, c)
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Reconnects) != 1 || len(events) != 2 || events[0].Resumed || !events[1].Resumed {
			t.Fatalf("reconnects %+v, events %+v: want one, lost then resumed", res.Reconnects, events)
		}
		rc := res.Reconnects[0]
		got := res.Summary.Counts
		if rc.Reason != "restarted" || !rc.Resumed || rc.InFlight != 4 || got.Sent != 1000 || got.Lost != 4 || got.LostUp != 4 || got.Reconnects != 1 {
			t.Fatalf("reconnect %+v, counts %+v: want 4 probes lost up in the restart, 1000 sent", rc, got)
		}
		if res.ReflectorCount != "partial" || res.Stopped != "count" {
			t.Fatalf("reflector count %q, stopped %q: want partial, count", res.ReflectorCount, res.Stopped)
		}
		checkTotals(t, res)
	})
}

// TestReconnectOpenLoop: an open-loop run whose reflector goes silent for
// half a second and comes back restarted keeps its schedule through the
// gap; every probe sent in it is lost on the way up, and the new session
// carries on to the end.
func TestReconnectOpenLoop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newMemConn(t)
		c.delay = 100 * time.Microsecond
		start := time.Now()
		var restart sync.Once
		c.dead = func() bool {
			switch since := time.Since(start); {
			case since < time.Second:
				return false
			case since < 1500*time.Millisecond:
				return true
			}
			restart.Do(func() { c.restart(t) })
			return false
		}
		cfg := Config{Rate: 1000, Duration: 3 * time.Second, Timeout: 100 * time.Millisecond, Silence: 300 * time.Millisecond,
			Reconnect: 5 * time.Second, sleep: time.Sleep}
		res, err := Run(context.Background(), cfg, c)
		if err != nil {
			t.Fatal(err)
		}
		got := res.Summary.Counts
		if len(res.Reconnects) != 1 || !res.Reconnects[0].Resumed || res.Reconnects[0].Reason != "silent" {
			t.Fatalf("reconnects %+v: want one, after silence, resumed", res.Reconnects)
		}
		if got.Sent != 3000 || got.Lost < 500 || got.LostUp != got.Lost || res.ReflectorCount != "partial" || res.Stopped != "duration" {
			t.Fatalf("counts %+v, count %q, stopped %q: want 3000 sent, at least the 500 of the dead half second lost, all up", got, res.ReflectorCount, res.Stopped)
		}
		marked := 0
		for _, iv := range res.Intervals {
			marked += int(iv.Counts.Reconnects)
		}
		if marked != 1 {
			t.Errorf("%d intervals marked reconnected, want 1", marked)
		}
		checkTotals(t, res)
	})
}

// TestReconnectGivesUp: a reflector that never comes back ends the run
// after the reconnect time, with partial results.
func TestReconnectGivesUp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newMemConn(t)
		c.delay = 100 * time.Microsecond
		var writes atomic.Int64
		c.dead = func() bool { return writes.Add(1) > 51 } // the Hello and 50 probes
		start := time.Now()
		res, err := Run(context.Background(), Config{Count: 1000, Timeout: 100 * time.Millisecond, Reconnect: 2 * time.Second}, c)
		if !errors.Is(err, ErrGone) {
			t.Fatalf("Run = %v, want ErrGone", err)
		}
		// Silence (3s) and then the reconnect time.
		if took := time.Since(start); took > 6*time.Second {
			t.Errorf("gave up after %v, want about 5s", took)
		}
		if len(res.Reconnects) != 1 || res.Reconnects[0].Resumed || res.Summary.Counts.Received != 50 {
			t.Fatalf("reconnects %+v, counts %+v: want one not resumed, 50 received", res.Reconnects, res.Summary.Counts)
		}
		checkTotals(t, res)
	})
}

// TestProbeLog: the log has a line per measured probe, with the status
// its counts say, and delays that add up.
func TestProbeLog(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newMemConn(t)
		c.delay = 100 * time.Microsecond
		c.dropUp = func(seq uint64) bool { return seq%10 == 0 }
		var buf bytes.Buffer
		lw, err := NewLogWriter(&buf)
		if err != nil {
			t.Fatal(err)
		}
		res, err := Run(context.Background(), Config{Count: 200, WarmupCount: 5, Window: 2, Timeout: 50 * time.Millisecond, Log: lw}, c)
		if err != nil {
			t.Fatal(err)
		}
		rows, err := csv.NewReader(&buf).ReadAll()
		if err != nil {
			t.Fatal(err)
		}
		if strings.Join(rows[0], ",")+"\n" != LogHeader {
			t.Fatalf("header %v", rows[0])
		}
		status := map[string]uint64{}
		for _, row := range rows[1:] {
			status[row[2]]++
			if row[2] == logReceived {
				rtt, _ := strconv.ParseInt(row[8], 10, 64)
				up, _ := strconv.ParseInt(row[10], 10, 64)
				down, _ := strconv.ParseInt(row[11], 10, 64)
				resp, _ := strconv.ParseInt(row[9], 10, 64)
				if rtt != up+resp+down || rtt != int64(2*c.delay) {
					t.Fatalf("row %v: rtt %d, want up+response+down and %v", row, rtt, 2*c.delay)
				}
			}
		}
		got := res.Summary.Counts
		if status[logReceived] != got.Received || status[logLost] != got.Lost || got.Lost == 0 || len(rows)-1 != int(got.Sent) {
			t.Fatalf("log statuses %v for counts %+v: want a line per probe, as counted", status, got)
		}
	})
}

// idClock is the system clock (synctest's, in a bubble) with an identity.
type idClock struct{ id uint64 }

func (c idClock) Now() int64              { return time.Now().UnixNano() }
func (c idClock) Time(ns int64) time.Time { return time.Unix(0, ns) }
func (c idClock) Identity() uint64        { return c.id }

// TestClockSameClock: when the reflector's Cookie says it reads the
// client's clock, the offset is 0 and the one-way delays are measured,
// however asymmetric the path (100µs up, 300µs down): not taken for an
// offset of -100µs as the estimate would.
func TestClockSameClock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newMemConn(t)
		refl, err := reflector.New(reflector.Config{Clock: idClock{7}})
		if err != nil {
			t.Fatal(err)
		}
		c.refl, c.delay = refl, 300*time.Microsecond
		c.delayOf = func(uint64) time.Duration { return 100 * time.Microsecond }
		res, err := Run(context.Background(), Config{Count: 100, Clock: idClock{7}}, c)
		if err != nil {
			t.Fatal(err)
		}
		co := res.ClockOffset
		if co == nil || co.Method != "same-clock" || co.Offset != 0 || co.EstimatedUp != nil || co.Drift == nil || co.Drift.PPM != 0 {
			t.Fatalf("clock offset %+v, want same-clock, offset 0, drift 0, no estimated delays", co)
		}
		if up, down := res.Summary.Up, res.Summary.Down; up.Min != 100*time.Microsecond || down.Min != 300*time.Microsecond {
			t.Fatalf("up min %v, down min %v; want the path's 100µs and 300µs", up.Min, down.Min)
		}
	})
}

// shiftedClock is the system clock moved by d.
type shiftedClock struct {
	d time.Duration
}

func (c shiftedClock) Now() int64              { return time.Now().UnixNano() + int64(c.d) }
func (c shiftedClock) Time(ns int64) time.Time { return time.Unix(0, ns-int64(c.d)) }

// TestClockEstimate: a reflector whose clock is off the client's (by a
// second either way, or not at all but without saying so) is estimated,
// labelled as such with its assumption, and its bound holds the true
// offset and the true one-way delays, symmetric or not. An asymmetric
// path is taken for an offset of half its asymmetry: the assumption.
func TestClockEstimate(t *testing.T) {
	const down = 100 * time.Microsecond
	for _, tt := range []struct {
		shift, up time.Duration
	}{
		{time.Second, down},
		{-1234567 * time.Microsecond, 150 * time.Microsecond},
		{0, 300 * time.Microsecond},
		{time.Second, 20 * time.Microsecond},
	} {
		synctest.Test(t, func(t *testing.T) {
			c := newMemConn(t)
			refl, err := reflector.New(reflector.Config{Clock: shiftedClock{tt.shift}})
			if err != nil {
				t.Fatal(err)
			}
			c.refl, c.shift, c.delay = refl, tt.shift, down
			c.delayOf = func(seq uint64) time.Duration { return tt.up + time.Duration(seq%7)*time.Microsecond }
			res, err := Run(context.Background(), Config{Count: 200, Clock: shiftedClock{}}, c)
			if err != nil {
				t.Fatal(err)
			}
			co := res.ClockOffset
			if co == nil || co.Method != "estimate" || !strings.Contains(co.Assumes, "symmetric minimum delays") {
				t.Fatalf("clock offset %+v, want an estimate that says what it assumes", co)
			}
			if want := tt.shift + (tt.up-down)/2; co.Offset != want {
				t.Errorf("offset %v, want %v: the shift %v and half the asymmetry", co.Offset, want, tt.shift)
			}
			if d := (co.Offset - tt.shift).Abs(); d > co.Bound {
				t.Errorf("offset %v for a shift of %v: off by %v, beyond the bound %v", co.Offset, tt.shift, d, co.Bound)
			}
			if up := co.EstimatedUp.Min; (up - tt.up).Abs() > co.Bound {
				t.Errorf("estimated up min %v, want %v within %v", up, tt.up, co.Bound)
			}
			if dn := co.EstimatedDown.Max; (dn - down).Abs() > co.Bound {
				t.Errorf("estimated down max %v, want %v within %v", dn, down, co.Bound)
			}
			if len(co.Warnings) != 0 || co.Drift != nil {
				t.Errorf("warnings %v, drift %+v for a steady shift over a short run: want none", co.Warnings, co.Drift)
			}
		})
	}
}

// seriesStart is when series start.
const seriesStart = int64(1_700_000_000e9)

// series feeds est a synthetic run of secs seconds at rate replies/s over
// a path of 1ms up and 3ms down with exponential queueing on top (mean
// 200µs, and one reply in 20 stuck for up to 50ms), between clocks whose
// offset starts at offset and drifts by ppm.
func series(est *offsetEst, secs, rate int, offset time.Duration, ppm float64, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 1))
	queue := func() int64 {
		q := rng.ExpFloat64() * 200e3
		if rng.IntN(20) == 0 {
			q += rng.Float64() * 50e6
		}
		return int64(q)
	}
	for i := range secs * rate {
		t1 := seriesStart + int64(i)*int64(time.Second)/int64(rate)
		theta := int64(offset) + int64(ppm*float64(t1-seriesStart)/1e6)
		u, d := int64(time.Millisecond)+queue(), 3*int64(time.Millisecond)+queue()
		est.add(t1+u+d, u+theta, d-theta)
	}
}

// TestClockDrift: the drift of one clock is 0 within its stated error,
// that of two clocks apart by 20ppm is found within its error; a short
// run reports none; a day of replies keeps at most maxOffsetWindows
// windows.
func TestClockDrift(t *testing.T) {
	for _, tt := range []struct {
		name      string
		secs      int
		ppm       float64
		offset    time.Duration
		wantDrift bool
	}{
		{"one clock", 30, 0, 0, true},
		{"one clock, long", 3600, 0, 0, true},
		{"20ppm", 60, 20, 5 * time.Millisecond, true},
		{"-3ppm, a day", 86400, -3, -time.Second, true},
		{"too short", 4, 0, 0, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			for seed := range uint64(5) {
				var est offsetEst
				series(&est, tt.secs, 20, tt.offset, tt.ppm, seed)
				if n := len(est.windows()); n > maxOffsetWindows {
					t.Fatalf("%d windows kept, want at most %d", n, maxOffsetWindows)
				}
				co := clockOffset(&est, false, result.Latency{}, result.Latency{})
				if !tt.wantDrift {
					if co.Drift != nil {
						t.Fatalf("drift %+v from %ds: want none reported", *co.Drift, tt.secs)
					}
					continue
				}
				d := co.Drift
				if d == nil {
					t.Fatalf("no drift from %ds of replies", tt.secs)
				}
				if math.Abs(d.PPM-tt.ppm) > d.ErrorPPM || d.ErrorPPM > 5 {
					t.Fatalf("seed %d: drift %+.3f ± %.3f ppm, want %+.1f within its error (and an error below 5ppm)", seed, d.PPM, d.ErrorPPM, tt.ppm)
				}
				// The asymmetry (1ms up, 3ms down) is what the
				// estimate takes for -1ms of offset: the offset at the
				// middle of the run, within its bound of the truth.
				ws := est.windows()
				ref := (ws[0].mid() + ws[len(ws)-1].mid()) / 2
				mid := tt.offset + time.Duration(tt.ppm*float64(ref-seriesStart)/1e6)
				if got := (co.Offset - mid).Abs(); got > co.Bound {
					t.Fatalf("seed %d: offset %v ± %v, the truth %v mid-run", seed, co.Offset, co.Bound, mid)
				}
			}
		})
	}
}

// TestWindDownSilent: a reflector that goes silent does not hold the end of
// a run: waiting for the probes in flight and closing the session (its
// retries included) take max(Timeout, 1s) after the deadline or a signal,
// together.
func TestWindDownSilent(t *testing.T) {
	for _, tt := range []struct {
		name    string
		cfg     Config
		signal  time.Duration // 0: none
		within  time.Duration // after the deadline or the signal
		stopped string
	}{
		{"deadline", Config{Duration: 2 * time.Second}, 0, time.Second, "duration"},
		{"deadline window", Config{Duration: 2 * time.Second, Window: 8, Timeout: 3 * time.Second}, 0, 3 * time.Second, "duration"},
		{"deadline open loop", Config{Duration: 2 * time.Second, SendInterval: 10 * time.Millisecond, sleep: time.Sleep}, 0, time.Second, "duration"},
		{"signal", Config{Duration: time.Hour}, 1500 * time.Millisecond, time.Second, "interrupted"},
		{"signal window", Config{Duration: time.Hour, Window: 8, Timeout: 3 * time.Second}, 1500 * time.Millisecond, 3 * time.Second, "interrupted"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				c := newMemConn(t)
				c.delay = time.Millisecond
				start := time.Now()
				c.dead = func() bool { return time.Since(start) > 500*time.Millisecond }
				ctx := context.Background()
				if tt.signal > 0 {
					var cancel context.CancelFunc
					ctx, cancel = context.WithTimeout(ctx, tt.signal)
					defer cancel()
				}
				res, err := Run(ctx, tt.cfg, c)
				took := time.Since(start)
				if err != nil {
					t.Fatal(err)
				}
				end := tt.signal
				if end == 0 {
					end = tt.cfg.Duration + 2*c.delay // after the handshake
				}
				if took > end+tt.within {
					t.Errorf("Run took %v, want at most %v", took, end+tt.within)
				}
				if res.Stopped != tt.stopped || res.ReflectorCount != "last-reply" || res.Summary.Counts.Lost == 0 {
					t.Errorf("stopped %q, count from %q, counts %+v: want %s, last-reply and losses", res.Stopped, res.ReflectorCount, res.Summary.Counts, tt.stopped)
				}
				checkTotals(t, res)
			})
		})
	}
}

// TestWindDownAnswered: a reflector that answers the close gives the run
// its exact count, also when the last probes in flight are lost.
func TestWindDownAnswered(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newMemConn(t)
		c.delay = time.Millisecond
		c.dropUp = func(seq uint64) bool { return seq%3 == 0 }
		res, err := Run(context.Background(), Config{Duration: time.Second, Window: 8, Timeout: 2 * time.Second}, c)
		if err != nil {
			t.Fatal(err)
		}
		got := res.Summary.Counts
		if res.ReflectorCount != "close" || got.Lost == 0 || got.LostUp != got.Lost {
			t.Fatalf("count from %q, counts %+v: want close, and every loss up", res.ReflectorCount, got)
		}
		checkTotals(t, res)
	})
}

// TestCollectorBounded: a flow far behind the others (its intervals skipped
// in stalls) does not make the collector hold an interval per step it is
// behind, and every count still lands in some total interval.
func TestCollectorBounded(t *testing.T) {
	var got []result.Interval
	c := &collector{want: 2, handler: funcs{interval: func(iv result.Interval) { got = append(got, iv) }}}
	one := func(k int) {
		a := newAcc()
		a.counts.Sent = 1
		c.add(k, a, time.Duration(k)*time.Second, time.Duration(k+1)*time.Second)
	}
	for k := range 100 {
		one(k) // flow 1
		if len(c.pending) > maxPending {
			t.Fatalf("after interval %d: %d pending, want at most %d", k, len(c.pending), maxPending)
		}
	}
	for k := range 10 {
		one(k) // flow 2, far behind
	}
	c.finish()
	var sent uint64
	for _, iv := range got {
		sent += iv.Counts.Sent
	}
	if sent != 110 {
		t.Fatalf("total intervals add up to %d sent, want 110", sent)
	}
}
