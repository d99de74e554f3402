package server

import (
	"context"
	"errors"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/volley-net/volley/internal/reflector"
	"github.com/volley-net/volley/internal/sockopt"
	"github.com/volley-net/volley/internal/stats"
	"github.com/volley-net/volley/internal/transport"
	"github.com/volley-net/volley/internal/tstamp"
)

// TestStampsUsed: under auto a socket that refuses stamps falls back to
// user-space times; under kernel or hardware the refusal is a usage
// error naming the flag.
func TestStampsUsed(t *testing.T) {
	refused := errors.ErrUnsupported
	for _, tt := range []struct {
		mode    tstamp.Mode
		err     error
		want    string
		wantErr bool
	}{
		{tstamp.Auto, nil, "kernel", false},
		{tstamp.Auto, refused, "user", false},
		{tstamp.Kernel, nil, "kernel", false},
		{tstamp.Kernel, refused, "", true},
		{tstamp.Hardware, nil, "hardware", false},
		{tstamp.Hardware, refused, "", true},
		{tstamp.User, refused, "user", false},
	} {
		t.Run(tt.mode.String()+"/"+errText(tt.err), func(t *testing.T) {
			got, err := stampsUsed(tt.mode, enabler{tt.err}, enabler{nil})
			if got != tt.want || (err != nil) != tt.wantErr {
				t.Fatalf("stampsUsed(%s, %v) = %q, %v; want %q, error %v", tt.mode, tt.err, got, err, tt.want, tt.wantErr)
			}
			if err != nil && (!errors.Is(err, ErrConfig) || !strings.HasPrefix(err.Error(), "--timestamps "+tt.mode.String()+": ")) {
				t.Errorf("stampsUsed(%s, %v) = %v, want an ErrConfig that names the flag", tt.mode, tt.err, err)
			}
		})
	}
}

// enabler is a socket whose EnableTimestamps gives err.
type enabler struct{ err error }

func (e enabler) EnableTimestamps(bool) error { return e.err }

func errText(err error) string {
	if err == nil {
		return "taken"
	}
	return "refused"
}

// TestStatsSum: the workers' n-th intervals are summed and emitted once,
// when the last of them reports it, in order.
func TestStatsSum(t *testing.T) {
	var got []reflector.Counters
	agg := &statsSum{workers: 3, emit: func(s, _ reflector.Counters) { got = append(got, s) }}
	iv := func(in uint64) reflector.Counters { return reflector.Counters{Elapsed: time.Second, PacketsIn: in} }
	agg.add(0, iv(1))
	agg.add(0, iv(10)) // worker 0's second, before the others' first
	agg.add(1, iv(2))
	if len(got) != 0 {
		t.Fatalf("emitted %+v before every worker reported", got)
	}
	agg.add(2, iv(4))
	agg.add(1, iv(20))
	agg.add(2, iv(40))
	if len(got) != 2 || got[0].PacketsIn != 7 || got[1].PacketsIn != 70 {
		t.Fatalf("emitted %+v, want the sums 7 and 70 in order", got)
	}
	var one []reflector.Counters
	single := &statsSum{workers: 1, emit: func(s, _ reflector.Counters) { one = append(one, s) }}
	single.add(0, iv(5))
	if len(one) != 1 || one[0].PacketsIn != 5 {
		t.Fatalf("one worker: emitted %+v, want its interval as it is", one)
	}
}

// TestStatsSumBlockedOutput: while the output blocks (a terminal or pipe
// nobody reads), the workers' adds return at once; once it flows, every
// count comes out, in order, the sums the emitter had no room for merged
// into lines over longer spans.
func TestStatsSumBlockedOutput(t *testing.T) {
	gate := make(chan struct{})
	var got []reflector.Counters
	agg := &statsSum{workers: 2, emit: func(s, _ reflector.Counters) {
		<-gate
		got = append(got, s)
	}}
	agg.start()
	const n = 200 // far more than the emitter's queue
	added := make(chan struct{})
	go func() {
		defer close(added)
		for k := range uint64(n) {
			for w := range 2 {
				agg.add(w, reflector.Counters{Elapsed: time.Second, PacketsIn: k + 1, Sessions: int(k)})
			}
		}
	}()
	<-added // returns although nothing was emitted: no add waited
	close(gate)
	agg.stop()
	var span time.Duration
	var in uint64
	var last int
	for _, s := range got {
		span, in, last = span+s.Elapsed, in+s.PacketsIn, s.Sessions
	}
	if want := uint64(n * (n + 1)); in != want || span != n*time.Second || last != 2*(n-1) {
		t.Fatalf("emitted %d lines: %d packets over %v, last open %d; want %d over %v, %d", len(got), in, span, last, want, n*time.Second, 2*(n-1))
	}
	if len(got) >= n {
		t.Errorf("emitted %d lines for %d intervals: none merged while the output was blocked", len(got), n)
	}
}

// TestStatsSumOwnsResponses: an interval's response times reach the
// output as they were when the worker added them, one worker or several,
// STAMP's too, although the worker resets them for its next interval
// before the emitter reads them (the reflector reuses them: OnInterval
// may not keep them). A reflector at --rate max, one worker, its output
// behind, crashed on one reset under the emitter's read.
func TestStatsSumOwnsResponses(t *testing.T) {
	for _, tt := range []struct {
		name    string
		workers int
		stamp   bool
	}{{"one worker", 1, false}, {"two workers", 2, false}, {"STAMP", 1, true}} {
		t.Run(tt.name, func(t *testing.T) {
			gate := make(chan struct{})
			var got []int64
			agg := &statsSum{workers: tt.workers, stamp: tt.stamp, emit: func(s, st reflector.Counters) {
				<-gate
				for _, c := range []reflector.Counters{s, st} {
					if c.Response != nil {
						got = append(got, c.Response.Count())
					}
				}
			}}
			agg.start()
			var dists []*stats.Dist
			for w := range tt.workers {
				d := stats.NewDist()
				for v := range int64(10) {
					d.Record(v + 1)
				}
				dists = append(dists, d)
				agg.add(w, reflector.Counters{Elapsed: time.Second, Response: d})
			}
			for _, d := range dists {
				d.Reset() // the worker's next interval
				d.Record(99)
			}
			close(gate)
			agg.stop()
			want := int64(10 * tt.workers)
			if tt.stamp {
				want = 10 // STAMP's, apart: the volley workers' sum has none
			}
			if len(got) != 1 || got[0] != want {
				t.Fatalf("response counts emitted %v, want [%d]", got, want)
			}
		})
	}
}

// intervals is a Handler that passes the intervals on.
type intervals chan Interval

func (h intervals) Interval(iv Interval) {
	select {
	case h <- iv:
	default: // the test has what it waits for
	}
}
func (h intervals) Lost(err error) {}

// TestServe: every listener has a worker; a message dropped on one of the
// UDP workers shows in the summed interval and in the totals, and Serve
// returns when its context is done.
func TestServe(t *testing.T) {
	ss, err := Open(context.Background(), Setup{Listen: "127.0.0.1:0", Workers: 2, UDP: sockopt.Options{TOS: -1},
		TCP: true, Stream: transport.ListenOptions{Socket: sockopt.Options{TOS: -1}}})
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	if n := len(ss.listeners()); n != 3 {
		t.Fatalf("%d listeners, want 2 UDP sockets and TCP's", n)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	h := make(intervals, 1)
	type served struct {
		total reflector.Counters
		err   error
	}
	done := make(chan served, 1)
	go func() {
		total, err := ss.Serve(ctx, Config{Reflector: reflector.Config{ReportInterval: 100 * time.Millisecond}, Intervals: true}, h)
		done <- served{total, err}
	}()
	c, err := net.Dial("udp", ss.UDP[0].LocalAddr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write([]byte("short")); err != nil {
		t.Fatal(err)
	}
	for iv := range h {
		if iv.NICOK {
			t.Errorf("interval %+v has NIC counters without an interface", iv)
		}
		if iv.Counts.Dropped() > 0 {
			if iv.Counts.Drops[reflector.DropShort] != 1 {
				t.Errorf("interval drops %v, want one short message", iv.Counts.Drops)
			}
			break
		}
	}
	cancel()
	r := <-done
	if r.err != nil {
		t.Fatalf("Serve: %v", r.err)
	}
	if r.total.Drops[reflector.DropShort] != 1 || r.total.PacketsIn != 1 {
		t.Errorf("totals %+v, want the one short message", r.total)
	}
}

// TestOpenLogConfig: a log file in a directory that is not there is the
// configuration's error, not the system's.
func TestOpenLogConfig(t *testing.T) {
	log := filepath.Join(t.TempDir(), "missing", "log.csv")
	ss, err := Open(context.Background(), Setup{Listen: "127.0.0.1:0", Workers: 1, UDP: sockopt.Options{TOS: -1}, LogPath: log})
	if err == nil {
		ss.Close()
		t.Fatalf("Open with --log %s succeeded", log)
	}
	if !errors.Is(err, ErrConfig) {
		t.Errorf("Open with --log %s: %v, want an ErrConfig", log, err)
	}
}
