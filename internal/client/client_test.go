package client

import (
	"bytes"
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/volley-net/volley/internal/result"
	"github.com/volley-net/volley/internal/testconn"
	"github.com/volley-net/volley/internal/transport"
	"github.com/volley-net/volley/internal/tstamp"
	"github.com/volley-net/volley/internal/wire"
	"github.com/volley-net/volley/internal/workload"
)

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

// runCase is one Run over a testconn.Conn, in a synctest bubble: the
// delays are exact and the clock does not move while code runs.
type runCase struct {
	name  string
	refl  testconn.Reflector                   // the reflector behind the conn
	delay time.Duration                        // the conn's one-way delay
	path  func(t *testing.T, c *testconn.Conn) // more rules of the path, when set
	cfg   Config
	// interrupt: the context is done this long into the run (0: never).
	interrupt time.Duration
	// wantErr: the error the run ends with (errors.Is); nil: none.
	wantErr error
	check   func(t *testing.T, r ran)
}

// ran is what a runCase's Run did.
type ran struct {
	c    *testconn.Conn
	res  *result.Result
	err  error
	took time.Duration // from the call to the return, in the bubble's clock
}

// runCases runs each case in a subtest.
func runCases(t *testing.T, cases []runCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				c := testconn.NewWith(t, tc.refl)
				c.Delay = tc.delay
				if tc.path != nil {
					tc.path(t, c)
				}
				ctx := context.Background()
				if tc.interrupt > 0 {
					var cancel context.CancelFunc
					ctx, cancel = context.WithTimeout(ctx, tc.interrupt)
					defer cancel()
				}
				start := time.Now()
				res, err := Run(ctx, tc.cfg, c)
				took := time.Since(start)
				switch {
				case tc.wantErr == nil && err != nil:
					t.Fatalf("Run = %v, want no error", err)
				case tc.wantErr != nil && !errors.Is(err, tc.wantErr):
					t.Fatalf("Run = %v, want %v", err, tc.wantErr)
				}
				tc.check(t, ran{c: c, res: res, err: err, took: took})
			})
		})
	}
}

// checkTotals checks that the summary's counts add up, that the intervals
// add up to the summary, and that every received probe has a round trip.
func checkTotals(t *testing.T, res *result.Result) {
	t.Helper()
	c := res.Summary.Counts
	if c.Sent != c.Received+c.Lost || c.Lost != c.LostUp+c.LostDown {
		t.Errorf("summary counts = %+v, want sent = received + lost and lost = up + down", c)
	}
	var sent, recv, lost uint64
	for _, iv := range res.Intervals {
		sent += iv.Counts.Sent
		recv += iv.Counts.Received
		lost += iv.Counts.Lost
	}
	if len(res.Intervals) > 0 && (sent != c.Sent || recv != c.Received || lost != c.Lost) {
		t.Errorf("intervals add up to sent %d received %d lost %d, want the summary's %d %d %d", sent, recv, lost, c.Sent, c.Received, c.Lost)
	}
	if res.Summary.RTT.Count != int64(c.Received) {
		t.Errorf("RTT count = %d, want one per received probe (%d)", res.Summary.RTT.Count, c.Received)
	}
}

func TestConfigErrors(t *testing.T) {
	for _, tt := range []struct {
		name string
		cfg  Config
	}{
		{"size below header", Config{Size: wire.HeaderLen - 1}},
		{"size above max", Config{Size: MaxSize + 1}},
		{"negative window", Config{Window: -1}},
		{"window above max", Config{Window: MaxWindow + 1}},
		{"negative duration", Config{Duration: -time.Second}},
		{"percentile above 100", Config{Percentiles: []float64{101}}},
		{"rate and interval", Config{Rate: 100, SendInterval: time.Millisecond}},
		{"negative rate", Config{Rate: -1}},
		{"rate above max", Config{Rate: MaxRate + 1}},
		{"poisson without rate", Config{Poisson: true}},
		{"burst and rate", Config{Burst: 3, Rate: 10}},
		{"period without burst", Config{Period: time.Second}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := Run(context.Background(), tt.cfg, nil); !errors.Is(err, ErrConfig) {
				t.Errorf("Run(%+v) = %v, want ErrConfig", tt.cfg, err)
			}
		})
	}
}

// TestProbeLog: the log has a line per measured probe, with the status
// its counts say, and delays that add up.
func TestProbeLog(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := testconn.New(t)
		c.Delay = 100 * time.Microsecond
		c.DropUp = func(seq uint64) bool { return seq%10 == 0 }
		var buf bytes.Buffer
		lw, err := NewLogWriter(&buf)
		if err != nil {
			t.Fatal(err)
		}
		res, err := Run(context.Background(), Config{Count: 200, WarmupCount: 5, Window: 2, Timeout: 50 * time.Millisecond, Log: lw}, c)
		if err != nil {
			t.Fatalf("Run = %v, want no error", err)
		}
		rows, err := csv.NewReader(&buf).ReadAll()
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Join(rows[0], ",") + "\n"; got != LogHeader {
			t.Fatalf("header = %q, want %q", got, LogHeader)
		}
		status := map[string]uint64{}
		for _, row := range rows[1:] {
			status[row[2]]++
			if row[2] == logReceived {
				rtt, _ := strconv.ParseInt(row[8], 10, 64)
				up, _ := strconv.ParseInt(row[10], 10, 64)
				down, _ := strconv.ParseInt(row[11], 10, 64)
				resp, _ := strconv.ParseInt(row[9], 10, 64)
				if rtt != up+resp+down || rtt != int64(2*c.Delay) {
					t.Fatalf("row %v: rtt = %d, want up+response+down and %v", row, rtt, 2*c.Delay)
				}
			}
		}
		got := res.Summary.Counts
		if status[logReceived] != got.Received || status[logLost] != got.Lost || got.Lost == 0 || len(rows)-1 != int(got.Sent) {
			t.Fatalf("log statuses = %v for counts %+v, want a line per probe, as counted", status, got)
		}
	})
}

func TestParallelFlows(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var conns []transport.Conn
		for i := 0; i < 3; i++ {
			c := testconn.New(t)
			c.Delay = time.Duration(i+1) * 100 * time.Microsecond
			conns = append(conns, c)
		}
		var seen int
		cfg := Config{Duration: 2 * time.Second, ReportInterval: 500 * time.Millisecond, Handler: Funcs{OnInterval: func(result.Interval) { seen++ }}}
		res, err := RunFlows(context.Background(), cfg, conns)
		if err != nil {
			t.Fatalf("RunFlows = %v, want no error", err)
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
				t.Errorf("flow %d counts = %+v, want %d sent", i, f.Summary.Counts, want)
			}
			sent += f.Summary.Counts.Sent
		}
		s := res.Summary
		if s.Counts.Sent != sent || s.RTT.Count != int64(sent) || s.RTT.Min != 200*time.Microsecond || s.RTT.Max != 600*time.Microsecond {
			t.Fatalf("total counts %+v, RTT %+v, want %d and the three flows' RTTs", s.Counts, s.RTT, sent)
		}
		if len(res.Intervals) != 4 || seen != 4 {
			t.Fatalf("total intervals = %d (%d handed over), want 4", len(res.Intervals), seen)
		}
		checkTotals(t, res)
	})
}

func TestWorkload(t *testing.T) {
	mix := []workload.Entry{
		{Name: "small", Weight: 1, Size: 100, ReplySize: 200},
		{Name: "held", Weight: 1, Size: 300, ReplySize: 64, Hold: workload.Duration(time.Millisecond)},
	}
	runCases(t, []runCase{{
		name:  "mix",
		delay: 100 * time.Microsecond,
		cfg:   Config{Workload: mix, Count: 400, Seed: 3},
		check: func(t *testing.T, r ran) {
			res := r.res
			if len(res.Workload) != 2 {
				t.Fatalf("workload results = %d, want 2", len(res.Workload))
			}
			small, held, d := res.Workload[0], res.Workload[1], r.c.Delay
			if small.Sent+held.Sent != 400 || small.Sent < 150 || held.Sent < 150 || small.Received != small.Sent || held.Received != held.Sent {
				t.Fatalf("entries sent %d and %d, received %d and %d, want 400 split about evenly, all received", small.Sent, held.Sent, small.Received, held.Received)
			}
			if small.RTT.Max != 2*d || held.RTT.Min != 2*d+time.Millisecond || held.Response.Max != 0 {
				t.Fatalf("small RTT max %v, held RTT min %v response max %v, want %v, %v and the hold left out", small.RTT.Max, held.RTT.Min, held.Response.Max, 2*d, 2*d+time.Millisecond)
			}
			tp := res.Summary.Throughput
			if tp.BytesUp != 100*small.Sent+300*held.Sent || tp.BytesDown != 200*small.Received+64*held.Received {
				t.Fatalf("bytes up %d down %d, want %d and %d from the mix", tp.BytesUp, tp.BytesDown, 100*small.Sent+300*held.Sent, 200*small.Received+64*held.Received)
			}
			if res.Config.Seed != 3 {
				t.Fatalf("seed = %d, want 3 recorded", res.Config.Seed)
			}
			checkTotals(t, res)
		},
	}, {
		name:  "gap",
		delay: 100 * time.Microsecond,
		cfg:   Config{Workload: []workload.Entry{{Weight: 1, Size: 64, Gap: workload.Duration(10 * time.Millisecond)}}, Duration: time.Second},
		check: func(t *testing.T, r ran) {
			if got := r.res.Summary.Counts.Sent; got != 100 {
				t.Fatalf("sent = %d in 1s with a 10ms gap, want 100", got)
			}
		},
	}})
}

// TestCollectorBounded: a flow far behind the others (its intervals skipped
// in stalls) does not make the collector hold an interval per step it is
// behind, and every count still lands in some total interval.
func TestCollectorBounded(t *testing.T) {
	var got []result.Interval
	c := &collector{want: 2, handler: Funcs{OnInterval: func(iv result.Interval) { got = append(got, iv) }}}
	one := func(k int) {
		a := newAcc(false)
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

func BenchmarkProbePath(b *testing.B) {
	r, probe := measuringRun(b, Config{Count: 1, history: 4096})
	b.ReportAllocs()
	for b.Loop() {
		probe()
	}
	if got := r.cur.counts.Received; got != r.cur.counts.Sent || got == 0 {
		b.Fatalf("received %d of %d", got, r.cur.counts.Sent)
	}
}

// measuringRun returns a run of cfg whose session is open on an
// in-memory reflector and measuring, and probe, which sends one probe and
// records its reply: the per-probe path, for benchmarks and allocation
// tests.
func measuringRun(tb testing.TB, cfg Config) (r *run, probe func()) {
	tb.Helper()
	// In memory a session sends faster than a reflector lets one by
	// default.
	conn := testconn.NewEcho(tb, testconn.Reflector{MaxRate: 1e12}, 2048)
	cfg, err := cfg.withDefaults()
	if err != nil {
		tb.Fatal(err)
	}
	r = newRun(cfg, conn)
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
	return r, func() {
		if err := r.send(); err != nil {
			tb.Fatal(err)
		}
		n, _ := conn.Read(r.rbuf)
		if err := h.Decode(r.rbuf[:n]); err != nil {
			tb.Fatal(err)
		}
		r.reply(&h, n, r.clk.Now(), 0, r.rbuf[:n], tstamp.Stamp{})
	}
}
