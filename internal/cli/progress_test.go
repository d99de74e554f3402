package cli

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
	"unicode/utf8"

	"github.com/volley-net/volley/internal/client"
	"github.com/volley-net/volley/internal/result"
	"github.com/volley-net/volley/internal/testterm"
)

// fakeTerm is a terminal that records what is written to it.
type fakeTerm struct {
	mu    sync.Mutex
	b     strings.Builder
	width int
}

func (f *fakeTerm) Write(p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.b.Write(p)
}

func (f *fakeTerm) Width() int { return f.width }

func (f *fakeTerm) String() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.b.String()
}

// fakeTermOf takes a *fakeTerm for a terminal, and nothing else.
func fakeTermOf(w io.Writer) (terminal, bool) {
	t, ok := w.(*fakeTerm)
	return t, ok
}

// drawn returns the progress lines drawn in s: the text between a \r and
// the erasure that ends it.
func drawn(s string) []string {
	var lines []string
	for _, part := range strings.Split(s, "\r")[1:] {
		if text, ok := strings.CutSuffix(part, "\x1b[K"); ok && text != "" {
			lines = append(lines, text)
		}
	}
	return lines
}

func latency(mean, max time.Duration, pcts ...result.Percentile) result.Latency {
	return result.Latency{Count: 100, Mean: mean, Max: max, Percentiles: pcts}
}

func TestProgressLine(t *testing.T) {
	iv := func(start, end time.Duration, sent, lostUp, lostDown uint64, rtt result.Latency) result.Interval {
		return result.Interval{Start: start, End: end, RTT: rtt,
			Counts: result.Counts{Sent: sent, Lost: lostUp + lostDown, LostUp: lostUp, LostDown: lostDown, Received: sent - lostUp - lostDown}}
	}
	p50p99 := latency(200*time.Microsecond, 9*time.Millisecond,
		result.Percentile{P: 50, Value: 123 * time.Microsecond}, result.Percentile{P: 90, Value: time.Millisecond},
		result.Percentile{P: 99, Value: 1500 * time.Microsecond})
	p90 := latency(200*time.Microsecond, 9*time.Millisecond, result.Percentile{P: 90, Value: time.Millisecond})
	tests := []struct {
		name    string
		st      progressStatus
		ivs     []result.Interval
		elapsed time.Duration
		want    string
	}{
		{"not started", progressStatus{}, nil, time.Second, ""},
		{"no interval yet", progressStatus{started: true, duration: time.Minute}, nil, 12340 * time.Millisecond, "12.3s/60.0s"},
		{"unbounded", progressStatus{started: true}, nil, 2 * time.Second, "2.0s"},
		{"warm-up", progressStatus{started: true, warmup: 2 * time.Second, duration: 10 * time.Second}, nil, time.Second, "1.0s warm-up"},
		{"after warm-up", progressStatus{started: true, warmup: 2 * time.Second, duration: 10 * time.Second}, nil, 3 * time.Second, "3.0s/12.0s"},
		{"figures", progressStatus{started: true, duration: time.Minute},
			[]result.Interval{iv(0, time.Second, 1000, 1, 2, p90), iv(time.Second, 2*time.Second, 2000, 0, 3, p50p99)}, 2100 * time.Millisecond,
			"2.1s/60.0s  2.00k probes/s  p50 123µs  p99 1.50ms  loss 6 (0.20%) up 1 down 5"},
		{"no p50 or p99: mean and max", progressStatus{started: true, duration: time.Minute},
			[]result.Interval{iv(0, 500*time.Millisecond, 500, 0, 0, p90)}, time.Second,
			"1.0s/60.0s  1.00k probes/s  mean 200µs  max 9.00ms  loss 0 (0.00%) up 0 down 0"},
		{"count", progressStatus{started: true, count: 10000},
			[]result.Interval{iv(0, time.Second, 1234, 0, 0, p50p99)}, 1500 * time.Millisecond,
			"1.5s  1234/10000 probes  1.23k probes/s  p50 123µs  p99 1.50ms  loss 0 (0.00%) up 0 down 0"},
		{"no replies", progressStatus{started: true},
			[]result.Interval{iv(0, time.Second, 10, 0, 10, result.Latency{})}, time.Second,
			"1.0s  10 probes/s  no replies  loss 10 (100.00%) up 0 down 10"},
		{"one-way", progressStatus{started: true, duration: time.Minute, oneWay: true},
			[]result.Interval{iv(0, time.Second, 1000, 0, 0, result.Latency{})}, 1100 * time.Millisecond,
			"1.1s/60.0s  1.00k probes/s"},
		{"no directions (a foreign peer)", progressStatus{started: true, undivided: true},
			[]result.Interval{iv(0, time.Second, 1000, 0, 4, p50p99)}, time.Second,
			"1.0s  1.00k probes/s  p50 123µs  p99 1.50ms  loss 4 (0.40%)"},
		{"reconnecting", progressStatus{started: true, reconnecting: 1}, nil, time.Second, "1.0s  reconnecting"},
		{"long", progressStatus{started: true, duration: 2 * time.Hour}, nil, 3725 * time.Second, "1:02:05/2:00:00"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := tt.st
			for _, iv := range tt.ivs {
				st.interval(iv)
			}
			if got := st.line(tt.elapsed); got != tt.want {
				t.Errorf("line(%s) = %q, want %q", tt.elapsed, got, tt.want)
			}
		})
	}
}

func TestFit(t *testing.T) {
	line := "12.3s/60.0s  1.00k probes/s  p50 123µs  p99 1.50ms"
	for _, width := range []int{0, 1, 2, 10, 41, 42, 43, 200} {
		got := fit(line, width)
		limit := width - 1
		if width == 0 {
			limit = 79 // unknown: 80 columns
		}
		n := utf8.RuneCountInString(got)
		if n > limit || !strings.HasPrefix(line, got) || (n < limit && got != line) || !utf8.ValidString(got) {
			t.Errorf("fit(line, %d) = %q (%d columns), want the line's first %d columns at most", width, got, n, limit)
		}
	}
}

func TestNewProgress(t *testing.T) {
	term, other := &fakeTerm{width: 80}, &bytes.Buffer{}
	tests := []struct {
		name           string
		f              clientFlags
		stdout, stderr io.Writer
		want           bool
	}{
		{"stderr a terminal", clientFlags{}, other, term, true},
		{"both", clientFlags{}, term, term, true},
		{"stderr not a terminal", clientFlags{}, term, other, false},
		{"-q", clientFlags{quiet: true}, term, term, false},
		{"--no-progress", clientFlags{noProgress: true}, term, term, false},
		{"--log - to a terminal", clientFlags{log: "-"}, term, term, false},
		{"--log - to a pipe", clientFlags{log: "-"}, other, term, true},
	}
	t.Setenv("TERM", "xterm")
	for _, tt := range tests {
		if got := newProgress(tt.f, tt.stdout, tt.stderr, fakeTermOf) != nil; got != tt.want {
			t.Errorf("%s: progress %v, want %v", tt.name, got, tt.want)
		}
	}
	t.Setenv("TERM", "dumb")
	if newProgress(clientFlags{}, term, term, fakeTermOf) != nil {
		t.Errorf("TERM=dumb: progress, want none")
	}
	if term.String() != "" {
		t.Errorf("newProgress wrote %q, want nothing", term.String())
	}
}

// testProgress returns the progress line on term for a run of flags f,
// its stdout and stderr (both on term), and the Handler that feeds it.
func testProgress(t *testing.T, ctx context.Context, term *fakeTerm, cfg *client.Config) (*progress, io.Writer, client.Funcs) {
	t.Helper()
	t.Setenv("TERM", "xterm")
	p := newProgress(clientFlags{}, term, term, fakeTermOf)
	if p == nil {
		t.Fatal("newProgress = nil on a terminal")
	}
	stdout, _ := p.writers(term, term, fakeTermOf)
	var h client.Funcs
	p.hook(ctx, cfg, &h)
	return p, stdout, h
}

// TestProgressNeverTears writes a report's lines, whole and in pieces,
// while the line is drawn: on the screen each row is a report line
// alone, and the line is gone at the end.
func TestProgressNeverTears(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		term := &fakeTerm{width: 30}
		cfg := client.Config{ReportInterval: time.Second}
		p, out, h := testProgress(t, t.Context(), term, &cfg)
		defer p.stop()
		h.Start(&result.Result{Config: result.Config{Duration: 5 * time.Second}})
		var want []string
		line := func(s string) {
			fmt.Fprintf(out, "%s\n", s)
			want = append(want, s)
		}
		line("header")
		for i := range 4 {
			time.Sleep(time.Second)
			iv := result.Interval{Start: time.Duration(i) * time.Second, End: time.Duration(i+1) * time.Second,
				Counts: result.Counts{Sent: 1000, Received: 1000},
				RTT:    latency(time.Millisecond, 2*time.Millisecond, result.Percentile{P: 50, Value: time.Millisecond}, result.Percentile{P: 99, Value: 2 * time.Millisecond})}
			line(fmt.Sprintf("interval %d", i))
			h.Interval(iv)
		}
		// A row written in two pieces, with ticks between them.
		io.WriteString(out, "in ")
		before := term.String()
		time.Sleep(time.Second)
		if after := term.String(); after != before {
			t.Errorf("wrote %q while a report row was unfinished, want nothing", strings.TrimPrefix(after, before))
		}
		io.WriteString(out, "pieces\n")
		want = append(want, "in pieces")
		time.Sleep(time.Second)
		h.End(&result.Result{})
		line("summary")

		got := term.String()
		rows, last := testterm.Screen(got)
		if strings.Join(rows, "|") != strings.Join(want, "|") || last != "" {
			t.Errorf("screen rows %q, cursor row %q; want %q and an empty one\nstream %q", rows, last, want, got)
		}
		lines := drawn(got)
		if len(lines) < 6 {
			t.Fatalf("progress lines drawn: %q, want one at least each second of 6\nstream %q", lines, got)
		}
		for _, l := range lines {
			if n := utf8.RuneCountInString(l); n > term.width-1 {
				t.Errorf("progress line %q is %d columns, want at most %d", l, n, term.width-1)
			}
		}
		if !strings.Contains(got, "\r2.0s/5.0s  1.00k probes/s  p5") {
			t.Errorf("no line drawn with the figures of the first intervals\nstream %q", got)
		}
	})
}

// TestProgressSignal: once the run's context is done (a signal), the
// line is erased and not drawn again; what follows is written as it is.
func TestProgressSignal(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		term := &fakeTerm{width: 80}
		cfg := client.Config{ReportInterval: time.Second}
		p, out, h := testProgress(t, ctx, term, &cfg)
		defer p.stop()
		h.Start(&result.Result{})
		time.Sleep(time.Second)
		cancel()
		synctest.Wait()
		at := len(term.String())
		time.Sleep(time.Second)
		io.WriteString(out, "summary\n")
		got := term.String()
		if rest := got[at:]; rest != "summary\n" {
			t.Errorf("after the signal: %q, want the summary alone", rest)
		}
		if rows, last := testterm.Screen(got); len(rows) != 1 || rows[0] != "summary" || last != "" || len(drawn(got)) == 0 {
			t.Errorf("screen rows %q, cursor row %q; want the summary alone after lines drawn\nstream %q", rows, last, got)
		}
	})
}

// TestProgressConcurrent writes lines from two goroutines while the line
// is redrawn every millisecond: each row on the screen is one of them.
func TestProgressConcurrent(t *testing.T) {
	term := &fakeTerm{width: 80}
	cfg := client.Config{ReportInterval: time.Second}
	p, out, h := testProgress(t, t.Context(), term, &cfg)
	p.every = time.Millisecond
	h.Start(&result.Result{})
	var wg sync.WaitGroup
	for g := range 2 {
		wg.Go(func() {
			for i := range 200 {
				fmt.Fprintf(out, "writer %d line %d\n", g, i)
			}
		})
	}
	wg.Wait()
	h.End(&result.Result{})
	rows, last := testterm.Screen(term.String())
	seen := map[string]bool{}
	for _, r := range rows {
		var g, i int
		if _, err := fmt.Sscanf(r, "writer %d line %d", &g, &i); err != nil || fmt.Sprintf("writer %d line %d", g, i) != r || seen[r] {
			t.Errorf("screen row %q: want a line written, once", r)
		}
		seen[r] = true
	}
	if len(rows) != 400 || last != "" {
		t.Errorf("%d rows, cursor row %q; want 400 and an empty one", len(rows), last)
	}
}

// TestProgressNoIntervals: with -i 0, the client is asked for intervals
// for the line, and the report gets none.
func TestProgressNoIntervals(t *testing.T) {
	for _, asked := range []time.Duration{-1, 2 * time.Second} {
		term := &fakeTerm{width: 80}
		cfg := client.Config{ReportInterval: asked}
		t.Setenv("TERM", "xterm")
		p := newProgress(clientFlags{}, term, term, fakeTermOf)
		printed := 0
		h := client.Funcs{OnInterval: func(result.Interval) { printed++ }}
		hidden := p.hook(t.Context(), &cfg, &h)
		h.Interval(result.Interval{End: time.Second, Counts: result.Counts{Sent: 5}})
		p.stop()
		switch {
		case asked < 0 && (!hidden || cfg.ReportInterval != progressInterval || printed != 0):
			t.Errorf("-i 0: asked %v, ReportInterval %s, %d intervals printed; want %s asked and none printed", hidden, cfg.ReportInterval, printed, progressInterval)
		case asked > 0 && (hidden || cfg.ReportInterval != asked || printed != 1):
			t.Errorf("-i %s: asked %v, ReportInterval %s, %d intervals printed; want the run's, printed", asked, hidden, cfg.ReportInterval, printed)
		}
		if p.st.counts.Sent != 5 {
			t.Errorf("ReportInterval %s: the line counts %d sent, want the interval's 5", asked, p.st.counts.Sent)
		}
	}
	rep := clientReport{noIntervals: true}
	res := result.Result{Config: result.Config{ReportInterval: progressInterval}}
	if rep.complete(&res); res.Config.ReportInterval != 0 {
		t.Errorf("report of a run with -i 0: report interval %s, want 0", res.Config.ReportInterval)
	}
}

// TestNoProgressOffTerminal runs the client with stdout and stderr not
// on a terminal: neither has a carriage return or an escape.
func TestNoProgressOffTerminal(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := Main(t.Context(), []string{"client", "-t", "1.2", "-i", "0.1"}, &stdout, &stderr); code != ExitOK {
		t.Fatalf("client: exit %d: %s", code, stderr.String())
	}
	if !strings.Contains(stdout.String(), "summary") {
		t.Fatalf("client: no summary:\n%s", stdout.String())
	}
	for name, s := range map[string]string{"stdout": stdout.String(), "stderr": stderr.String()} {
		if strings.ContainsAny(s, "\r\x1b") {
			t.Errorf("%s has progress bytes: %q", name, s)
		}
	}
}
