package report

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"math"
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
			Kernel:     kernelTimes(1000),
		}
	}
	rtt, d := latency(2000, 25*time.Microsecond)
	upC, _ := latency(2000, 12*time.Microsecond+666)
	downC, _ := latency(2000, 12*time.Microsecond-666)
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
	sum.Kernel = kernelTimes(2000)
	second := iv(1, 3, 1)
	second.Counts.Reconnects = 1 // the gap below
	// Reported with two probes in flight; their replies came later, and
	// count in the summary only.
	second.Counts.Received, second.Counts.InFlight = 998, 2
	// An estimate between two hosts.
	clk := &result.ClockOffset{Method: "estimate", Offset: -666, Bound: 9031,
		Assumes:       "the smallest up and down delays of the run were equal (symmetric minimum delays)",
		Drift:         &result.Drift{PPM: 0.8, ErrorPPM: 0.5, Span: 1500 * time.Millisecond, Windows: 4},
		EstimatedUp:   &upC,
		EstimatedDown: &downC,
	}
	return &result.Result{
		SchemaVersion: result.SchemaVersion,
		Tool:          "volley",
		Version:       "test",
		Config: result.Config{
			Target: "udp://127.0.0.1:7766", Transport: "udp", LocalAddr: "127.0.0.1:40000", RemoteAddr: "127.0.0.1:7766",
			Duration: 2 * time.Second, WarmupCount: 10, Size: 64, Window: 1, Timeout: time.Second,
			ReportInterval: time.Second, Percentiles: pcts, Timestamps: "kernel",
			Rate: 1000, Poisson: true, Seed: 7, Threshold: 5 * time.Millisecond,
			Granted:  result.Grant{MaxRate: 1e6},
			Parallel: 1,
			Socket:   &result.Socket{SendBuffer: 425984, RecvBuffer: 425984, TTL: 64},
		},
		Start:     time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC),
		Intervals: []result.Interval{iv(0, 0, 0), second},
		Summary:   sum,
		Histogram: d.Histogram("rtt", 10),
		Distribution: &result.Distribution{
			RTT:          d.Summary(result.DistributionLadder).Percentiles,
			Up:           d.Summary(result.DistributionLadder).Percentiles,
			Down:         d.Summary(result.DistributionLadder).Percentiles,
			RTTHistogram: d.Histogram("rtt", 10),
		},
		ReflectorCount: "partial",
		Reconnects:     []result.Reconnect{{At: 1200 * time.Millisecond, Reason: "restarted", InFlight: 1, Resumed: true, Gap: 150 * time.Millisecond}},
		Stopped:        "duration",
		ClockOffset:    clk,
		CPU:            &result.CPU{Seconds: 2, User: 0.25, System: 0.75, CPUs: 2},
		Timestamps:     &result.Timestamps{Asked: "auto", Client: "kernel", Reflector: "kernel"},
	}
}

// TestScheduleNotKept: an open-loop run that missed more than 1% of its
// schedule's slots (an interrupted one too) says the schedule was not
// kept, with the slots missed; one within 1% does not, nor one whose rate
// a Poisson schedule's gaps moved without a slot missed. The cpu line
// comes with the figures, and not without them (a result saved before
// they were kept).
func TestScheduleNotKept(t *testing.T) {
	for _, tt := range []struct {
		name    string
		sent    float64 // probes/s achieved, of 1000 asked
		skipped uint64  // of 2003 sent
		stopped string
		want    bool
	}{
		{"5% of the slots missed", 950, 105, "duration", true},
		{"within 1%", 991, 18, "duration", false},
		{"interrupted, 5% missed", 950, 105, "interrupted", true},
		{"Poisson's gaps, none missed", 935, 0, "duration", false},
	} {
		res := fixture()
		res.Summary.Throughput.ProbesPerSecUp, res.Stopped = tt.sent, tt.stopped
		res.Summary.Counts.Skipped = tt.skipped
		var b bytes.Buffer
		if err := WriteSummary(&b, res); err != nil {
			t.Fatal(err)
		}
		got := strings.Contains(b.String(), "schedule NOT KEPT")
		if got != tt.want {
			t.Errorf("%s: says not kept %v, want %v:\n%s", tt.name, got, tt.want, b.String())
		}
		if tt.want && !strings.Contains(b.String(), "missed 105 of its 2108 slots (4.98%; achieved -5.00% of the rate asked)") {
			t.Errorf("%s: no shortfall or slots in:\n%s", tt.name, b.String())
		}
		if !strings.Contains(b.String(), "cpu      the client's process kept 0.50 of 2 CPUs busy while it sent (user 0.25s, system 0.75s over 2.00s)") {
			t.Errorf("%s: no cpu line in:\n%s", tt.name, b.String())
		}
	}
	// A run a few gaps long says so instead of a share of the rate: one
	// probe more or less is much of a few.
	short := fixture()
	short.Summary.End = short.Summary.Start + 5*time.Millisecond
	var sb bytes.Buffer
	if err := WriteSummary(&sb, short); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(sb.String(), "achieved 1.00k (over 5.0 of its gaps: too short a run to compare)") {
		t.Errorf("a run of 5 gaps: no note that it is too short in:\n%s", sb.String())
	}
	// Flows each keep their schedule over their own span; the total's
	// span, from the first flow's start to the last one's end, is longer.
	flows := fixture()
	flows.Config.Parallel = 2
	flows.Summary.Throughput.ProbesPerSecUp = 1500
	flow := result.Flow{Summary: flows.Summary}
	flow.Summary.Throughput.ProbesPerSecUp = 1000
	flows.Flows = []result.Flow{flow, flow}
	var fb bytes.Buffer
	if err := WriteSummary(&fb, flows); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(fb.String(), "schedule asked 2.00k probes/s, achieved 2.00k (+0.00%)") {
		t.Errorf("two flows at their rate: not achieved in:\n%s", fb.String())
	}
	// A flow that failed before its first slot measured nothing: the
	// others' schedule is judged alone.
	failed := result.Flow{Error: "no reflector"}
	flows.Flows = append(flows.Flows, failed)
	flows.Config.Parallel = 3
	fb.Reset()
	if err := WriteSummary(&fb, flows); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(fb.String(), "schedule asked 2.00k probes/s, achieved 2.00k (+0.00%)") {
		t.Errorf("two flows at their rate and one failed: not achieved in:\n%s", fb.String())
	}
	res := fixture()
	res.CPU = nil
	var b bytes.Buffer
	if err := WriteSummary(&b, res); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "cpu ") {
		t.Errorf("a result without cpu figures prints a cpu line:\n%s", b.String())
	}
}

// TestClockText: the clock line says "measured" only for one clock, and
// an estimate says so, what it assumes, and its bound, also for the
// corrected delays; the note under the table says what up and down are.
func TestClockText(t *testing.T) {
	text := func(c *result.ClockOffset) string {
		res := fixture()
		res.ClockOffset = c
		var b bytes.Buffer
		if err := WriteSummary(&b, res); err != nil {
			t.Fatal(err)
		}
		return b.String()
	}
	same := text(&result.ClockOffset{Method: "same-clock", Bound: time.Microsecond, Drift: &result.Drift{}})
	for _, want := range []string{"reads the client's clock (same host and boot): offset 0 within 1.00µs", "(up and down are measured"} {
		if !strings.Contains(same, want) {
			t.Errorf("same-clock summary lacks %q:\n%s", want, same)
		}
	}
	if strings.Contains(same, "an estimate") || strings.Contains(same, "estimated up") {
		t.Errorf("same-clock summary mentions an estimate:\n%s", same)
	}
	est := text(fixture().ClockOffset)
	for _, want := range []string{"reflector -666ns ± 9.03µs from the client, an estimate that assumes", "(symmetric minimum delays)",
		"drift +0.8 ± 0.5 ppm", "estimated up p50", "each within ±9.03µs", "include the reflector's clock offset, which is only estimated"} {
		if !strings.Contains(est, want) {
			t.Errorf("estimate's summary lacks %q:\n%s", want, est)
		}
	}
	if strings.Contains(est, "up and down are measured") || strings.Contains(est, "corrected up") {
		t.Errorf("estimate's summary shows delays as measured:\n%s", est)
	}
	hw := stampedFixture()
	hw.ClockOffset = &result.ClockOffset{Method: "same-clock", Bound: time.Microsecond}
	var b bytes.Buffer
	if err := WriteSummary(&b, hw); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "NICs' clocks") {
		t.Errorf("kernel stamps said to come from NIC clocks:\n%s", b.String())
	}
	hw.Timestamps.Client, hw.Timestamps.Reflector = "hardware", "hardware"
	b.Reset()
	if err := WriteSummary(&b, hw); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "up kern and down kern compare the NICs' clocks") {
		t.Errorf("hardware stamps on one host not said to compare NIC clocks:\n%s", b.String())
	}
	none := text(nil)
	if !strings.Contains(none, "include the reflector's clock offset, unknown here") {
		t.Errorf("summary without a clock offset does not say up and down include it:\n%s", none)
	}
}

// kernelTimes is what kernel stamps at both ends measure of n probes.
func kernelTimes(n int) *result.KernelTimes {
	rtt, _ := latency(n, 20*time.Microsecond)
	resp, _ := latency(n-1, 700*time.Nanosecond)
	way, _ := latency(n, 9*time.Microsecond)
	stack, _ := latency(n, 2*time.Microsecond)
	queue, _ := latency(n, 500*time.Nanosecond)
	return &result.KernelTimes{RTT: rtt, Response: resp, Up: way, Down: way, SendStack: stack, RecvStack: stack, LocalQueue: queue}
}

// userFixture is fixture() from a run with --timestamps user: no kernel
// figures.
func userFixture() *result.Result {
	res := fixture()
	res.Config.Timestamps = "user"
	res.Timestamps = nil
	res.Summary.Kernel = nil
	for i := range res.Intervals {
		res.Intervals[i].Kernel = nil
	}
	return res
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
			End:        2 * time.Second,
			Counts:     result.Counts{Sent: 500, Received: 450, Lost: 50, LostUp: 50, LossPercent: 10},
			Up:         up,
			Throughput: result.Throughput{ProbesPerSecUp: 250, BitsPerSecUp: 128000, BytesUp: 32000},
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
	// On one clock too: the clock line speaks of up only.
	same := oneWayFixture()
	same.ClockOffset = &result.ClockOffset{Method: "same-clock", Bound: time.Microsecond}
	var b2 bytes.Buffer
	if err := WriteText(&b2, same); err != nil {
		t.Fatal(err)
	}
	for _, text := range []string{b.String(), b2.String()} {
		for _, l := range strings.Split(text, "\n") {
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
		if !strings.Contains(text, "\nipdv up ") {
			t.Error("a one-way report has no IPDV up")
		}
	}
	if !strings.Contains(b2.String(), "up is measured") {
		t.Errorf("a one-way report on one clock does not say its up delays are measured:\n%s", b2.String())
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
		{math.MinInt64, "-9223372037s"}, // a hostile figure: -d overflows
		{math.MaxInt64, "9223372037s"},
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

// stampedFixture is fixture() from a run with kernel stamps at both ends
// and a note, at --rate max, ended by its threshold.
func stampedFixture() *result.Result {
	res := fixture()
	rtt, _ := latency(2000, 13*time.Microsecond)
	resp, _ := latency(1999, 6*time.Microsecond)
	way, _ := latency(2000, 600*time.Nanosecond)
	stack, _ := latency(2000, 2*time.Microsecond)
	queue, _ := latency(2000, 800*time.Nanosecond)
	res.Config.Rate, res.Config.RateMax, res.Config.Poisson, res.Config.Seed = 0, true, false, 0
	res.Summary.RTTFromSchedule, res.Summary.SendError, res.Summary.Counts.Skipped = nil, nil, 0 // no schedule
	res.Summary.Kernel = &result.KernelTimes{RTT: rtt, Response: resp, Up: way, Down: way, SendStack: stack, RecvStack: stack, LocalQueue: queue}
	res.Timestamps = &result.Timestamps{Asked: "auto", Client: "kernel", Reflector: "kernel", Notes: []string{"3 replies came without a kernel receive stamp"}}
	res.Stopped = "threshold"
	res.Threshold = &result.ThresholdHit{Seq: 1999, At: 1999 * time.Millisecond, RTT: 5100 * time.Microsecond}
	return res
}

// TestGoldenStamps: the kernel figures join the reports as rows and
// fields of their own, and leave the others as they were: the report of
// the run without them (--timestamps user) is the stamped one less those.
func TestGoldenStamps(t *testing.T) {
	var b bytes.Buffer
	if err := WriteText(&b, stampedFixture()); err != nil {
		t.Fatal(err)
	}
	golden(t, "stamps.txt", b.Bytes())
	b.Reset()
	if err := WriteText(&b, fixture()); err != nil {
		t.Fatal(err)
	}
	var plain bytes.Buffer
	if err := WriteText(&plain, userFixture()); err != nil {
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

// onewayFixture is a one-way run of two flows (-P 2 --oneway), with a
// linear histogram of the way up, whose second flow lost its reflector.
func onewayFixture() *result.Result {
	none := stats.NewDist().Summary(pcts)
	iv := func(i int, lost uint64) result.Interval {
		up, _ := latency(1000-int(lost), 30*time.Microsecond)
		sendErr, _ := latency(1000, 200*time.Nanosecond)
		return result.Interval{
			Start:  time.Duration(i) * time.Second,
			End:    time.Duration(i+1) * time.Second,
			Counts: result.Counts{Sent: 1000, Received: 1000 - lost, Lost: lost, LostUp: lost, LossPercent: float64(lost) / 10},
			RTT:    none, Response: none, Up: up, Down: none,
			IPDV:            result.IPDV{RTT: none, Up: none, Down: none},
			Throughput:      result.Throughput{ProbesPerSecUp: 1000, BitsPerSecUp: 512000, BytesUp: 64000},
			RTTFromSchedule: &none, SendError: &sendErr,
		}
	}
	sum := iv(0, 2)
	sum.End = 2 * time.Second
	sum.Counts = result.Counts{Sent: 2000, Received: 1998, Lost: 2, LostUp: 2, LossPercent: 0.1}
	_, d := latency(1997, 30*time.Microsecond)
	d.Record(int64(5 * time.Millisecond)) // an outlier of the linear histogram
	sum.Up = d.Summary(pcts)
	sum.Throughput.BytesUp = 128000
	flow := func(port int, lost uint64) result.Flow {
		s := iv(0, lost)
		s.Counts.Sent, s.Counts.Received = 1000, 1000-lost
		return result.Flow{LocalAddr: fmt.Sprintf("127.0.0.1:%d", port), Summary: s, ReflectorCount: "close", Stopped: "count"}
	}
	silent := flow(40002, 2)
	silent.ReflectorCount, silent.Stopped = "last-reply", "reflector-silent"
	silent.Error = "reflector silent: 127.0.0.1:7766 sent no reply for 3s"
	return &result.Result{
		SchemaVersion: result.SchemaVersion,
		Tool:          "volley",
		Version:       "test",
		Config: result.Config{
			Target: "udp://127.0.0.1:7766", Transport: "udp", LocalAddr: "127.0.0.1:40001", RemoteAddr: "127.0.0.1:7766",
			Count: 1000, WarmupDuration: 100 * time.Millisecond, Size: 64, Window: 1, Timeout: time.Second,
			ReportInterval: time.Second, Percentiles: pcts, Timestamps: "user",
			SendInterval: time.Millisecond, OneWay: true, Parallel: 2,
			Granted: result.Grant{MaxRate: 1e6},
			Socket:  &result.Socket{SendBuffer: 425984, RecvBuffer: 425984, TTL: 64, DF: true, Asked: []string{"--df"}},
		},
		Start:          time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC),
		Intervals:      []result.Interval{iv(0, 0), iv(1, 2)},
		Summary:        sum,
		Histogram:      d.LinearHistogram("up", 20*time.Microsecond),
		ReflectorCount: "last-reply",
		Stopped:        "reflector-silent",
		Flows:          []result.Flow{flow(40001, 0), silent},
		Error:          "flow 2: " + silent.Error,
		// Both flows' reflector reads the client's clock: the up delays
		// are measured.
		ClockOffset: &result.ClockOffset{Method: "same-clock", Bound: time.Microsecond, Drift: &result.Drift{}},
	}
}

// tcpFixture is a TCP run of bursts with a workload mix and socket
// options, whose clock offset came with a warning.
func tcpFixture() *result.Result {
	res := userFixture()
	c := &res.Config
	c.Target, c.Transport, c.RemoteAddr = "tcp://127.0.0.1:7766", "tcp", "127.0.0.1:7766"
	c.Rate, c.Poisson, c.WarmupCount = 0, false, 0
	c.Threshold, c.ThresholdSkip = time.Millisecond, 10 // no warm-up: the cold probes are not judged
	c.Window, c.Burst, c.Period, c.Seed = 4, 5, 100*time.Millisecond, 5
	c.TCP = &result.TCPConnect{ConnectTime: 61 * time.Microsecond, Cwnd: 10, MSS: 32768, RTT: 50 * time.Microsecond}
	c.Socket = &result.Socket{SendBuffer: 2626560, RecvBuffer: 131072, TOS: 0x10, TTL: 64, Congestion: "cubic", NoDelay: true,
		Interface: "lo", Bind: "127.0.0.1", Asked: []string{"--tos 0x10", "--bind 127.0.0.1", "--interface lo"}}
	res.Summary.RTTFromSchedule, res.Summary.SendError, res.Summary.Counts.Skipped = nil, nil, 0
	for i := range res.Intervals {
		res.Intervals[i].TCP = &result.TCPInterval{Retransmits: uint64(i), Cwnd: 10, RTT: 40 * time.Microsecond, RTTVar: 9 * time.Microsecond}
	}
	res.Summary.TCP = &result.TCPInterval{Retransmits: 1, Cwnd: 10, RTT: 40 * time.Microsecond, RTTVar: 9 * time.Microsecond}
	res.Timestamps = &result.Timestamps{Asked: "auto", Client: "user",
		Notes: []string{"tcp has no stamps per message (only UDP sockets take them); the times are the tool's own clock readings (user)"}}
	res.ClockOffset.Warnings = []string{"the offset moved 240µs over the run (drift +120.0 ppm), more than its bound: the offset is the one at the middle of the run, and the estimated delays are off by up to 120µs at its ends"}
	res.ClockOffset.Drift = &result.Drift{PPM: 120, ErrorPPM: 3.5, Span: 2 * time.Second, Windows: 4}
	res.ReflectorCount, res.Reconnects = "close", nil
	res.Summary.Counts.Reconnects, res.Intervals[1].Counts.Reconnects = 0, 0
	small, _ := latency(1200, 20*time.Microsecond)
	large, _ := latency(800, 60*time.Microsecond)
	resp, _ := latency(800, 900*time.Nanosecond)
	res.Workload = []result.WorkloadEntry{
		{Name: "small", Weight: 3, Size: 64, Sent: 1202, Received: 1200, Lost: 2, RTT: small, Response: resp},
		{Name: "large", Weight: 2, Size: 1400, ReplySize: 9000, Hold: 50 * time.Microsecond, Gap: time.Millisecond, Sent: 801, Received: 800, Lost: 1, RTT: large, Response: resp},
	}
	return res
}

// TestGoldenShapes: the JSON of runs whose documents differ in shape
// from the default run's (one-way, TCP).
func TestGoldenShapes(t *testing.T) {
	for name, res := range map[string]*result.Result{"oneway.json": onewayFixture(), "tcp.json": tcpFixture()} {
		var b bytes.Buffer
		if err := WriteJSON(&b, res); err != nil {
			t.Fatal(err)
		}
		golden(t, name, b.Bytes())
	}
}

// TestStopReasonsWorded: every reason a run can end for, as the result's
// schema lists them, has its words in the summary line (a run whose
// reflector stopped reading printed no "ended:" at all).
func TestStopReasonsWorded(t *testing.T) {
	data, err := os.ReadFile("../../docs/result.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	var schema struct {
		Defs map[string]struct {
			Enum []string `json:"enum"`
		} `json:"$defs"`
	}
	if err := json.Unmarshal(data, &schema); err != nil {
		t.Fatal(err)
	}
	reasons := schema.Defs["stopped"].Enum
	if len(reasons) == 0 {
		t.Fatal("the schema lists no reasons for stopped")
	}
	for _, why := range reasons {
		if _, ok := stopReasons[why]; why != "" && !ok {
			t.Errorf("stopped %q has no words for the summary line", why)
		}
	}
}
