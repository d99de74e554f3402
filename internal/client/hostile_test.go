package client

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"runtime"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/volley-net/volley/internal/deadline"
	"github.com/volley-net/volley/internal/result"
	"github.com/volley-net/volley/internal/testconn"
	"github.com/volley-net/volley/internal/transport"
	"github.com/volley-net/volley/internal/wire"
)

// stallConn is a testconn.Conn over a stream (its remote a TCP address) whose
// reflector stops reading after some probes: from then on every write
// blocks until its write deadline, as on a socket whose buffers are full.
type stallConn struct {
	*testconn.Conn
	after  uint64 // probes taken before the stall
	probes atomic.Uint64
	closes atomic.Int64 // Close messages written

	write *deadline.Deadline
}

func newStallConn(t *testing.T, after uint64) *stallConn {
	c := &stallConn{Conn: testconn.New(t), after: after, write: deadline.New()}
	c.Delay = time.Millisecond
	return c
}

var stallRemote = &net.TCPAddr{IP: net.IPv4(127, 0, 0, 2), Port: 7766}

func (c *stallConn) RemoteAddr() net.Addr { return stallRemote }

func (c *stallConn) SetWriteDeadline(t time.Time) error {
	c.write.Set(t)
	return nil
}

func (c *stallConn) Write(b []byte) (int, error) {
	var h wire.Header
	if err := h.Decode(b); err != nil {
		return 0, err
	}
	switch h.Type {
	case wire.TypeClose:
		c.closes.Add(1)
	case wire.TypeProbe:
		c.probes.Add(1)
	}
	if c.probes.Load() <= c.after && h.Type != wire.TypeClose {
		return c.Conn.Write(b)
	}
	// Nothing is ever read: the write waits for its deadline.
	deadline.Wait[struct{}](c.write, nil, nil)
	return 0, os.ErrDeadlineExceeded
}

// TestStalledWrite: a reflector that stops reading cannot hold a run: the
// write it blocks ends by its deadline, the run ends with ErrStalled and
// its partial results, and does not try to close the session over a
// connection that may hold part of a message.
func TestStalledWrite(t *testing.T) {
	for _, tt := range []struct {
		name      string
		cfg       Config
		interrupt time.Duration // ctx is done this long into the run (0: never)
		// The run ends this long after it started (virtual time): the
		// silence time (3s) after the stall, or max(timeout, 1s) after the
		// end of sending or the signal.
		want    time.Duration
		wantErr []error
	}{
		{"ping-pong, silence", Config{Duration: time.Minute}, 0, 3 * time.Second, []error{ErrStalled}},
		{"ping-pong, end of run", Config{Duration: time.Second}, 0, 2 * time.Second, []error{ErrStalled}},
		{"ping-pong, long timeout", Config{Duration: time.Second, Timeout: 2 * time.Second}, 0, 3 * time.Second, []error{ErrStalled}},
		{"ping-pong, signal", Config{Duration: time.Hour}, 500 * time.Millisecond, 1500 * time.Millisecond, []error{ErrStalled}},
		{"window", Config{Duration: time.Second, Window: 8}, 0, 2 * time.Second, []error{ErrStalled}},
		{"open loop, end of run", Config{Duration: time.Second, Rate: 100, sleep: time.Sleep}, 0, 2 * time.Second, []error{ErrStalled}},
		{"open loop, signal", Config{Duration: time.Hour, Rate: 100, sleep: time.Sleep}, 500 * time.Millisecond, 1500 * time.Millisecond, []error{ErrStalled}},
		// No reply for the silence time: the receiver ends the run, and
		// the sender's blocked write with it.
		{"open loop, silence", Config{Duration: time.Hour, Rate: 100, sleep: time.Sleep}, 0, 3 * time.Second, []error{ErrStalled, ErrSilent}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				c := newStallConn(t, 5)
				ctx := context.Background()
				if tt.interrupt > 0 {
					var cancel context.CancelFunc
					ctx, cancel = context.WithTimeout(ctx, tt.interrupt)
					defer cancel()
				}
				start := time.Now()
				res, err := Run(ctx, tt.cfg, c)
				took := time.Since(start)
				ok := false
				for _, e := range tt.wantErr {
					ok = ok || errors.Is(err, e)
				}
				if !ok || res == nil {
					t.Fatalf("Run = %v, want one of %v and a result", err, tt.wantErr)
				}
				// Virtual time: exact but for the few ms the probes took.
				if took < tt.want || took > tt.want+50*time.Millisecond {
					t.Errorf("the run ended %v after it started, want %v", took, tt.want)
				}
				if res.Error != err.Error() || res.ReflectorCount != "last-reply" || c.closes.Load() != 0 {
					t.Errorf("result error %q, count from %q, %d closes: want the run's error, last-reply and no close", res.Error, res.ReflectorCount, c.closes.Load())
				}
				if errors.Is(err, ErrStalled) && res.Stopped != "reflector-stalled" {
					t.Errorf("stopped %q, want reflector-stalled", res.Stopped)
				}
				// With a window the replies wait unread behind the blocked
				// write.
				if s := res.Summary.Counts; s.Sent < 5 || (tt.cfg.Window == 0 && s.Received != 5) || s.Sent != s.Received+s.Lost {
					t.Errorf("partial counts %+v, want the 5 probes before the stall (and their replies)", s)
				}
			})
		})
	}
}

// brokenConn is a testconn.Conn over a stream whose reads fail with err once
// n replies have been read, and at every read after that.
type brokenConn struct {
	*testconn.Conn
	n, reads int
	err      error
}

func (c *brokenConn) RemoteAddr() net.Addr { return stallRemote }

func (c *brokenConn) Read(b []byte) (int, error) {
	if c.reads >= c.n {
		return 0, c.err
	}
	n, err := c.Conn.Read(b)
	if err == nil {
		c.reads++
	}
	return n, err
}

// TestBrokenStream: a stream read that fails, and would fail again at
// every read (a frame longer than a stream carries), ends the run at once
// with the error, instead of counting errors in a spin.
func TestBrokenStream(t *testing.T) {
	for _, cfg := range []Config{{Duration: time.Minute}, {Duration: time.Minute, Rate: 1000, sleep: time.Sleep}} {
		t.Run(fmt.Sprintf("rate %v", cfg.Rate), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				frame := errors.New("stream: message too large: a frame of 4294967295 bytes (the most is 4194304)")
				c := &brokenConn{Conn: testconn.New(t), n: 11, err: frame} // the Cookie and 10 replies
				c.Delay = time.Millisecond
				start := time.Now()
				res, err := Run(context.Background(), cfg, c)
				if !errors.Is(err, ErrBroken) || !errors.Is(err, frame) || res == nil {
					t.Fatalf("Run = %v, want ErrBroken with the read's error, and a result", err)
				}
				if took := time.Since(start); took > 50*time.Millisecond {
					t.Errorf("the run ended %v after it started, want at the broken read", took)
				}
				want := "the stream from the reflector broke: tcp://127.0.0.2:7766: " + frame.Error()
				s := res.Summary.Counts
				if err.Error() != want || res.Stopped != "reflector-broken" || s.Received != 10 || s.Errors != 0 || s.Sent != s.Received+s.Lost {
					t.Errorf("error %q, stopped %q, counts %+v: want %q, reflector-broken, the 10 replies and no error counted", err, res.Stopped, s, want)
				}
			})
		})
	}
}

// TestStreamIntervals: with StreamIntervals the intervals go to
// the Handler only, and the result holds none, one flow or several.
func TestStreamIntervals(t *testing.T) {
	for _, flows := range []int{1, 3} {
		t.Run(fmt.Sprintf("%d flows", flows), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var conns []transport.Conn
				for range flows {
					c := testconn.New(t)
					c.Delay = 100 * time.Microsecond
					conns = append(conns, c)
				}
				var seen []result.Interval
				cfg := Config{Duration: 2 * time.Second, ReportInterval: 500 * time.Millisecond, StreamIntervals: true,
					Handler: Funcs{OnInterval: func(iv result.Interval) { seen = append(seen, iv) }}}
				res, err := RunFlows(context.Background(), cfg, conns)
				if err != nil {
					t.Fatal(err)
				}
				if len(res.Intervals) != 0 || len(seen) != 4 {
					t.Fatalf("%d intervals kept, %d handed over: want none and 4", len(res.Intervals), len(seen))
				}
				var sent uint64
				for _, iv := range seen {
					sent += iv.Counts.Sent
				}
				if sent != res.Summary.Counts.Sent {
					t.Errorf("intervals handed over add up to %d sent, summary says %d", sent, res.Summary.Counts.Sent)
				}
			})
		})
	}
}

// BenchmarkIntervalMemory: what each interval a run has ended keeps in
// memory (retained-B/interval), with the intervals kept in the result
// (a library's Run) and streamed (the command line, every format). An
// interval has a figure in every distribution, kernel ones included, as
// in a UDP run with kernel stamps.
func BenchmarkIntervalMemory(b *testing.B) {
	for _, stream := range []bool{false, true} {
		name := "kept"
		if stream {
			name = "streamed"
		}
		b.Run(name, func(b *testing.B) {
			cfg, err := Config{Duration: time.Hour, StreamIntervals: stream, Handler: Funcs{OnInterval: func(result.Interval) {}}}.withDefaults()
			if err != nil {
				b.Fatal(err)
			}
			r := newRun(cfg, &testconn.Echo{})
			r.res = &result.Result{Intervals: []result.Interval{}}
			r.segs = []segment{{first: 1}}
			r.startMeasuring(r.clk.Now())
			interval := func() {
				a := r.cur
				for i := range a.d {
					a.d[i].Record(int64(20 * time.Microsecond))
				}
				for _, d := range a.kernel() {
					d.Record(int64(15 * time.Microsecond))
				}
				a.counts.Sent, a.counts.Received = 1000, 1000
				r.offset.add(r.clk.Now(), 2, 3)
				r.closeCurrent(r.clk.Now())
			}
			interval() // the first two make the kernel distributions of the two accumulators that take turns
			interval()
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			n := 0
			b.ReportAllocs()
			for b.Loop() {
				interval()
				n++
			}
			runtime.GC()
			runtime.ReadMemStats(&after)
			b.ReportMetric(float64(int64(after.HeapAlloc)-int64(before.HeapAlloc))/float64(n), "retained-B/interval")
			if stream != (len(r.res.Intervals) == 0) {
				b.Fatalf("%d intervals kept", len(r.res.Intervals))
			}
			runtime.KeepAlive(r)
		})
	}
}

// deadlineConn is a testconn.Conn that counts the write deadlines set on it.
type deadlineConn struct {
	*testconn.Conn
	set atomic.Int64
}

func (c *deadlineConn) SetWriteDeadline(time.Time) error { c.set.Add(1); return nil }

// TestWriteDeadlineCost: a run does not set a write deadline per probe,
// but a few in all: the probe path stays as cheap as it was.
func TestWriteDeadlineCost(t *testing.T) {
	for _, cfg := range []Config{{Duration: 3 * time.Second}, {Duration: 3 * time.Second, Rate: 2000, sleep: time.Sleep}} {
		t.Run(fmt.Sprintf("rate %v", cfg.Rate), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				c := &deadlineConn{Conn: testconn.New(t)}
				c.Delay = 250 * time.Microsecond
				res, err := Run(context.Background(), cfg, c)
				if err != nil {
					t.Fatal(err)
				}
				// The Hello's, the first probe's, one when half the
				// silence time has gone, one at the end's cap, the
				// close's.
				if sent, n := res.Summary.Counts.Sent, c.set.Load(); sent < 5000 || n > 5 {
					t.Errorf("%d write deadlines set for %d probes, want at most 5", n, sent)
				}
			})
		})
	}
}
