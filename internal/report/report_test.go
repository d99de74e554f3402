package report

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/volley-net/volley/internal/result"
	"github.com/volley-net/volley/internal/stats"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

var pcts = []float64{50, 90, 99, 99.9, 99.99}

// latency builds a distribution from n values spread deterministically
// around base.
func latency(n int, base time.Duration) (result.Latency, *stats.Dist) {
	d := stats.NewDist()
	for i := 0; i < n; i++ {
		d.Record(int64(base) + int64(i*i%997)*int64(base)/400)
	}
	return d.Summary(pcts), d
}

func fixture() *result.Result {
	iv := func(i int, lost, up uint64) result.Interval {
		rtt, _ := latency(1000, 25*time.Microsecond)
		resp, _ := latency(1000, 900*time.Nanosecond)
		upL, _ := latency(1000, 12*time.Microsecond)
		downL, _ := latency(1000, 12*time.Microsecond)
		ipdv, _ := latency(999, 700*time.Nanosecond)
		return result.Interval{
			Start:  time.Duration(i) * time.Second,
			End:    time.Duration(i+1) * time.Second,
			Counts: result.Counts{Sent: 1000 + lost, Received: 1000, Lost: lost, LostUp: up, LostDown: lost - up, LossPercent: 100 * float64(lost) / float64(1000+lost), Duplicates: 1, DuplicatesUp: 1, Reordered: 2, ReorderedUp: 1, ReorderedDown: 1, Late: 1},
			RTT:    rtt, Response: resp, Up: upL, Down: downL,
			IPDV:       result.IPDV{RTT: ipdv, Up: ipdv, Down: ipdv},
			Throughput: result.Throughput{ProbesPerSecUp: float64(1000 + lost), ProbesPerSecDown: 1000, BitsPerSecUp: float64(1000+lost) * 512, BitsPerSecDown: 512000},
		}
	}
	rtt, d := latency(2000, 25*time.Microsecond)
	sum := iv(0, 3, 1)
	sum.End = 2 * time.Second
	sum.Counts = result.Counts{Sent: 2003, Received: 2000, Lost: 3, LostUp: 1, LostDown: 2, LossPercent: 100 * 3.0 / 2003,
		Duplicates: 2, DuplicatesUp: 1, DuplicatesDown: 1, Reordered: 4, ReorderedUp: 2, ReorderedDown: 1, Late: 2}
	sum.RTT = rtt
	sched, _ := latency(2000, 26*time.Microsecond)
	sendErr, _ := latency(2000, 150*time.Nanosecond)
	sum.RTTFromSchedule, sum.SendError = &sched, &sendErr
	sum.Counts.Skipped = 3
	sum.Counts.Reconnects = 1
	sum.Throughput.RequestsPerSec = 1000
	second := iv(1, 3, 1)
	second.Counts.Reconnects = 1 // the gap below
	// Reported with two probes in flight; their replies came later, and
	// count in the summary only.
	second.Counts.Received, second.Counts.InFlight = 998, 2
	return &result.Result{
		SchemaVersion: result.SchemaVersion,
		Tool:          "volley",
		Version:       "test",
		Config: result.Config{
			Target: "udp://127.0.0.1:7766", Transport: "udp", LocalAddr: "127.0.0.1:40000", RemoteAddr: "127.0.0.1:7766",
			Duration: 2 * time.Second, WarmupCount: 10, Size: 64, Window: 1, Timeout: time.Second,
			ReportInterval: time.Second, Percentiles: pcts, Timestamps: "user",
			Rate: 1000, Poisson: true, Seed: 7, Threshold: 5 * time.Millisecond,
		},
		Start:          time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC),
		Intervals:      []result.Interval{iv(0, 0, 0), second},
		Summary:        sum,
		Histogram:      d.Histogram("rtt", 10),
		ReflectorCount: "partial",
		Reconnects:     []result.Reconnect{{At: 1200 * time.Millisecond, Reason: "restarted", InFlight: 1, Resumed: true, Gap: 150 * time.Millisecond}},
		Stopped:        "duration",
	}
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./internal/report -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file; got:\n%s", name, got)
	}
}

func TestGoldenJSON(t *testing.T) {
	var b bytes.Buffer
	if err := WriteJSON(&b, fixture()); err != nil {
		t.Fatal(err)
	}
	golden(t, "result.json", b.Bytes())
	// The document reads back into the model unchanged.
	var back result.Result
	if err := json.Unmarshal(b.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	var again bytes.Buffer
	if err := WriteJSON(&again, &back); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(again.Bytes(), b.Bytes()) {
		t.Error("JSON does not survive a round trip through result.Result")
	}
}

func TestGoldenJSONL(t *testing.T) {
	var b bytes.Buffer
	if err := WriteJSONL(&b, fixture()); err != nil {
		t.Fatal(err)
	}
	golden(t, "result.jsonl", b.Bytes())
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 3 {
		t.Fatalf("%d JSON lines, want 2 intervals and a result", len(lines))
	}
	for i, want := range []string{"interval", "interval", "result"} {
		var v struct {
			Type string `json:"type"`
		}
		if err := json.Unmarshal([]byte(lines[i]), &v); err != nil || v.Type != want {
			t.Errorf("line %d type %q (%v), want %q", i, v.Type, err, want)
		}
	}
}

func TestGoldenText(t *testing.T) {
	var b bytes.Buffer
	if err := WriteText(&b, fixture()); err != nil {
		t.Fatal(err)
	}
	golden(t, "result.txt", b.Bytes())
}

// oneWayFixture is a one-way run of two flows: the reflector measured
// the up delays and their IPDV; nothing came back.
func oneWayFixture() *result.Result {
	up, _ := latency(1000, 40*time.Microsecond)
	ipdv, _ := latency(899, 2*time.Microsecond)
	sendErr, _ := latency(1000, 150*time.Nanosecond)
	iv := func(i int) result.Interval {
		se := sendErr
		return result.Interval{
			Start: time.Duration(i) * time.Second, End: time.Duration(i+1) * time.Second,
			Counts:     result.Counts{Sent: 500},
			SendError:  &se,
			Throughput: result.Throughput{ProbesPerSecUp: 500, BitsPerSecUp: 256000, BytesUp: 32000},
		}
	}
	flow := func(addr string) result.Flow {
		return result.Flow{LocalAddr: addr, ReflectorCount: "close", Stopped: "duration", Summary: result.Interval{
			End:    2 * time.Second,
			Counts: result.Counts{Sent: 500, Received: 450, Lost: 50, LostUp: 50, LossPercent: 10},
			Up:     up,
		}}
	}
	sched := result.Latency{Percentiles: []result.Percentile{}}
	se := sendErr
	return &result.Result{
		SchemaVersion: result.SchemaVersion, Tool: "volley", Version: "test",
		Config: result.Config{
			Target: "udp://127.0.0.1:7766", Transport: "udp", LocalAddr: "127.0.0.1:40000", RemoteAddr: "127.0.0.1:7766",
			Duration: 2 * time.Second, Size: 64, Window: 1, Timeout: time.Second, ReportInterval: time.Second,
			Percentiles: pcts, Timestamps: "user", Rate: 250, OneWay: true, Parallel: 2,
		},
		Start:     time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC),
		Intervals: []result.Interval{iv(0), iv(1)},
		Summary: result.Interval{
			End: 2 * time.Second,
			Counts: result.Counts{Sent: 1000, Received: 900, Lost: 100, LostUp: 100, LossPercent: 10,
				Duplicates: 2, DuplicatesUp: 2, Reordered: 3, ReorderedUp: 3, Errors: 1},
			Up:              up,
			IPDV:            result.IPDV{Up: ipdv},
			RTTFromSchedule: &sched, SendError: &se,
			Throughput: result.Throughput{ProbesPerSecUp: 500, BitsPerSecUp: 256000, BytesUp: 64000},
		},
		ReflectorCount: "close", Stopped: "duration",
		Flows: []result.Flow{flow("127.0.0.1:40000"), flow("127.0.0.1:40001")},
	}
}

// TestGoldenOneWay: a one-way report prints what the mode measures (what
// was sent, what arrived, the delays up and their IPDV) and no column or
// row of what it cannot.
func TestGoldenOneWay(t *testing.T) {
	var b bytes.Buffer
	if err := WriteText(&b, oneWayFixture()); err != nil {
		t.Fatal(err)
	}
	golden(t, "oneway.txt", b.Bytes())
	for _, l := range strings.Split(b.String(), "\n") {
		for _, cell := range strings.Fields(l) {
			if cell == "-" {
				t.Errorf("a one-way report has a cell with nothing in it: %q", l)
				break
			}
		}
		for _, word := range []string{"rtt", "down", "resp", "late", "requests"} {
			if strings.Contains(l, word) && !strings.Contains(l, "nothing came back down") {
				t.Errorf("a one-way report shows %s, which it cannot measure: %q", word, l)
			}
		}
	}
	if !strings.Contains(b.String(), "\nipdv up ") {
		t.Error("a one-way report has no IPDV up")
	}
}

func TestDuration(t *testing.T) {
	tests := []struct {
		in   time.Duration
		want string
	}{
		{0, "0ns"},
		{850, "850ns"},
		{999, "999ns"},
		{1000, "1.00µs"},
		{25449, "25.4µs"},
		{123456, "123µs"},
		{999_600, "1.00ms"},
		{1_204_000, "1.20ms"},
		{12_340_000, "12.3ms"},
		{999_700_000, "1.00s"},
		{1_200_000_000, "1.20s"},
		{125 * time.Second, "125s"},
		{-25449, "-25.4µs"},
	}
	for _, tt := range tests {
		if got := Duration(tt.in); got != tt.want {
			t.Errorf("Duration(%d) = %q, want %q", int64(tt.in), got, tt.want)
		}
	}
}

func TestSI(t *testing.T) {
	for in, want := range map[float64]string{0: "0", 7: "7", 35012: "35.0k", 999.6: "1.00k", 17.93e6: "17.9M", 1.5: "1.50", 512000: "512k"} {
		if got := SI(in); got != want {
			t.Errorf("SI(%v) = %q, want %q", in, got, want)
		}
	}
}

// stampedFixture is fixture() from a run with kernel stamps at both ends.
func stampedFixture() *result.Result {
	res := fixture()
	rtt, _ := latency(2000, 13*time.Microsecond)
	resp, _ := latency(1999, 6*time.Microsecond)
	way, _ := latency(2000, 600*time.Nanosecond)
	stack, _ := latency(2000, 2*time.Microsecond)
	res.Config.Timestamps = "kernel"
	res.Summary.Kernel = &result.KernelTimes{RTT: rtt, Response: resp, Up: way, Down: way, SendStack: stack, RecvStack: stack}
	res.Timestamps = &result.Timestamps{Asked: "auto", Client: "kernel", Reflector: "kernel", Notes: []string{"3 replies came without a kernel receive stamp"}}
	return res
}

// TestGoldenStamps: the kernel figures join the reports as rows and
// fields of their own, and leave the existing ones as they were (the
// result.* golden files).
func TestGoldenStamps(t *testing.T) {
	var b bytes.Buffer
	if err := WriteText(&b, stampedFixture()); err != nil {
		t.Fatal(err)
	}
	golden(t, "stamps.txt", b.Bytes())
	var plain bytes.Buffer
	if err := WriteText(&plain, fixture()); err != nil {
		t.Fatal(err)
	}
	// Every line of the plain report is in the stamped one, in order.
	rest := b.String()
	for _, l := range strings.SplitAfter(plain.String(), "\n") {
		if l == "" || strings.HasPrefix(l, "---") {
			continue
		}
		i := strings.Index(rest, l)
		if i < 0 {
			t.Fatalf("stamped report lost or changed the line %q", l)
		}
		rest = rest[i+len(l):]
	}
	b.Reset()
	if err := WriteJSON(&b, stampedFixture()); err != nil {
		t.Fatal(err)
	}
	golden(t, "stamps.json", b.Bytes())
}

// TestJSONStream: the document written over a run, interval by interval,
// is WriteJSON's to the byte: the golden files hold for both.
func TestJSONStream(t *testing.T) {
	noIntervals := fixture()
	noIntervals.Intervals = []result.Interval{}
	stamped := stampedFixture()
	stamped.Intervals[1].Kernel = stamped.Summary.Kernel
	stamped.Intervals[0].TCP = &result.TCPInterval{Retransmits: 1, Cwnd: 10, RTT: time.Millisecond}
	for _, tt := range []struct {
		name   string
		res    *result.Result
		golden string
	}{
		{"golden", fixture(), "result.json"},
		{"stamps", stampedFixture(), "stamps.json"},
		{"no intervals", noIntervals, ""},
		{"kernel and tcp intervals", stamped, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var want bytes.Buffer
			if err := WriteJSON(&want, tt.res); err != nil {
				t.Fatal(err)
			}
			if tt.golden != "" {
				golden(t, tt.golden, want.Bytes())
			}
			// As a run writes it: the opening from the result as it opens,
			// then each interval, then the rest from the final result,
			// which holds no intervals.
			var got bytes.Buffer
			s := NewJSONStream(&got)
			opening := *tt.res
			opening.Intervals, opening.Summary, opening.Histogram = nil, result.Interval{}, nil
			if err := s.Begin(&opening); err != nil {
				t.Fatal(err)
			}
			for _, iv := range tt.res.Intervals {
				if err := s.Interval(iv); err != nil {
					t.Fatal(err)
				}
			}
			final := *tt.res
			final.Intervals = nil
			if err := s.End(&final); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got.Bytes(), want.Bytes()) {
				t.Errorf("streamed document differs from WriteJSON's; got:\n%s\nwant:\n%s", got.Bytes(), want.Bytes())
			}
			// End alone writes the whole document.
			got.Reset()
			if err := NewJSONStream(&got).End(tt.res); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got.Bytes(), want.Bytes()) {
				t.Errorf("End alone: got:\n%s\nwant:\n%s", got.Bytes(), want.Bytes())
			}
		})
	}
}
