package saved

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/volley-net/volley/internal/report"
	"github.com/volley-net/volley/internal/result"
)

// The files under testdata are real outputs of volley client against a
// volley server on loopback: run.json with run.csv (--format json --log,
// open loop, kernel stamps), par.json with par.csv (-P 2), run.jsonl
// (--window 4), and the first lines of the server's --log,
// reflector.csv.

func read(t *testing.T, name string, opt Options) *File {
	t.Helper()
	f, err := Read(context.Background(), filepath.Join("testdata", name), opt)
	if err != nil {
		t.Fatalf("Read(%s) = %v", name, err)
	}
	return f
}

// TestDocumentRoundTrip: a document read back and written again is the
// document, byte for byte; a stream, the stream.
func TestDocumentRoundTrip(t *testing.T) {
	for _, tt := range []struct {
		name  string
		kind  Kind
		write func(*bytes.Buffer, *result.Result) error
	}{
		{"run.json", JSON, func(b *bytes.Buffer, r *result.Result) error { return report.WriteJSON(b, r) }},
		{"par.json", JSON, func(b *bytes.Buffer, r *result.Result) error { return report.WriteJSON(b, r) }},
		{"run.jsonl", JSONL, func(b *bytes.Buffer, r *result.Result) error { return report.WriteJSONL(b, r) }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := read(t, tt.name, Options{})
			want, err := os.ReadFile(filepath.Join("testdata", tt.name))
			if err != nil {
				t.Fatal(err)
			}
			var got bytes.Buffer
			if err := tt.write(&got, f.Result); err != nil {
				t.Fatal(err)
			}
			if f.Kind != tt.kind || f.Label != tt.name || got.String() != string(want) {
				t.Errorf("Read(%s): kind %v, label %q, written again:\n%s\nwant kind %v and the file:\n%s", tt.name, f.Kind, f.Label, got.String(), tt.kind, want)
			}
			if len(f.Result.Intervals) == 0 {
				t.Errorf("Read(%s): no intervals", tt.name)
			}
		})
	}
}

// TestProbeLogMatchesRun: a probe log rebuilt gives the counts and the
// figures of the run that wrote it (its JSON document, written at the
// same time), for every delay and percentile.
func TestProbeLogMatchesRun(t *testing.T) {
	for _, name := range []string{"run", "par"} {
		t.Run(name, func(t *testing.T) {
			doc := read(t, name+".json", Options{}).Result
			log := read(t, name+".csv", Options{Interval: doc.Config.ReportInterval, Percentiles: doc.Config.Percentiles})
			if log.Kind != ProbeLog || len(log.Notes) == 0 {
				t.Errorf("kind %v, notes %q: want a probe log, with notes", log.Kind, log.Notes)
			}
			got, want := log.Result.Summary, doc.Summary
			gc, wc := got.Counts, want.Counts
			if gc.Sent != wc.Sent || gc.Received != wc.Received || gc.Lost != wc.Lost || gc.Late != wc.Late || gc.Duplicates != wc.Duplicates {
				t.Errorf("counts %+v, want the run's %+v", gc, wc)
			}
			for _, l := range []struct {
				name      string
				got, want result.Latency
			}{{"rtt", got.RTT, want.RTT}, {"up", got.Up, want.Up}, {"down", got.Down, want.Down}, {"response", got.Response, want.Response},
				{"ipdv rtt", got.IPDV.RTT, want.IPDV.RTT}, {"ipdv up", got.IPDV.Up, want.IPDV.Up}} {
				if !reflect.DeepEqual(l.got, l.want) {
					t.Errorf("%s = %+v, want the run's %+v", l.name, l.got, l.want)
				}
			}
			if !reflect.DeepEqual(log.Result.Distribution, doc.Distribution) {
				t.Errorf("distribution = %+v, want the run's %+v", log.Result.Distribution, doc.Distribution)
			}
			if log.Result.Config.Parallel != doc.Config.Parallel || len(log.Probes) != int(wc.Sent) {
				t.Errorf("%d flows, %d probes kept; want %d and %d", log.Result.Config.Parallel, len(log.Probes), doc.Config.Parallel, wc.Sent)
			}
			var sent uint64
			for _, iv := range log.Result.Intervals {
				sent += iv.Counts.Sent
			}
			if sent != wc.Sent || len(log.Result.Intervals) == 0 {
				t.Errorf("%d intervals of %d probes in all, want the run's %d", len(log.Result.Intervals), sent, wc.Sent)
			}
		})
	}
}

// TestKernelFromLog: the kernel stamps' figures of run.csv are the run's.
func TestKernelFromLog(t *testing.T) {
	doc := read(t, "run.json", Options{}).Result
	log := read(t, "run.csv", Options{Percentiles: doc.Config.Percentiles}).Result
	if doc.Summary.Kernel == nil || !reflect.DeepEqual(log.Summary.Kernel, doc.Summary.Kernel) || log.Config.Timestamps != "kernel" {
		t.Errorf("kernel %+v (timestamps %q), want the run's %+v", log.Summary.Kernel, log.Config.Timestamps, doc.Summary.Kernel)
	}
	if !reflect.DeepEqual(log.Summary.SendError, doc.Summary.SendError) || !reflect.DeepEqual(log.Summary.RTTFromSchedule, doc.Summary.RTTFromSchedule) {
		t.Errorf("send error %+v, rtt sched %+v; want the run's %+v, %+v", log.Summary.SendError, log.Summary.RTTFromSchedule, doc.Summary.SendError, doc.Summary.RTTFromSchedule)
	}
}

const header = "flow,seq,status,t1_ns,t2_ns,t3_ns,t4_ns,sched_ns,rtt_ns,response_ns,up_ns,down_ns," +
	"t1_kernel_ns,t2_kernel_ns,t3_kernel_ns,t4_kernel_ns,rtt_kernel_ns,response_kernel_ns,up_kernel_ns,down_kernel_ns\n"

// logLines makes a probe log: a line a probe (received, every third lost),
// 1 ms apart, received in 100 µs, then a late reply and two duplicates.
func logLines(n int) string {
	var b strings.Builder
	b.WriteString(header)
	const t0 = 1_700_000_000_000_000_000
	for i := 1; i <= n; i++ {
		t1 := int64(t0 + i*int(time.Millisecond))
		if i%3 == 0 {
			fmt.Fprintf(&b, "1,%d,lost,%d,0,0,0,0,,,,,,,,,,,,\n", i, t1)
			continue
		}
		fmt.Fprintf(&b, "1,%d,received,%d,%d,%d,%d,0,%d,%d,%d,%d,,,,,,,,\n", i, t1, t1+40000, t1+50000, t1+100000+int64(i), 100000+i, 10000, 40000, 50000+i)
	}
	fmt.Fprintf(&b, "1,3,late,0,%d,%d,%d,0,,,,,,,,,,,,\n", t0+1, t0+2, t0+3)
	fmt.Fprintf(&b, "1,1,duplicate,%d,%d,%d,%d,0,1,1,1,1,,,,,,,,\n", t0+int64(time.Millisecond), t0+int64(time.Millisecond)+40000, t0+int64(time.Millisecond)+50000, t0+int64(time.Millisecond)+200000)
	fmt.Fprintf(&b, "1,2,duplicate,%d,%d,%d,%d,0,1,1,1,1,,,,,,,,\n", t0+2*int64(time.Millisecond), t0, t0+99, t0+99)
	return b.String()
}

// TestProbeLogCounts: every status is counted where it belongs, and the
// delays and IPDV of consecutive replies are the log's.
func TestProbeLogCounts(t *testing.T) {
	f, err := ReadFrom(context.Background(), strings.NewReader(logLines(30)), "x.csv", Options{Interval: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	c := f.Result.Summary.Counts
	want := result.Counts{Sent: 30, Received: 20, Lost: 10, LossPercent: 100 * 10.0 / 30, Late: 1, Duplicates: 2, DuplicatesDown: 1, DuplicatesUp: 1}
	if c != want {
		t.Errorf("counts %+v, want %+v", c, want)
	}
	s := f.Result.Summary
	if s.RTT.Count != 20 || s.RTT.Min != 100001 || s.RTT.Max != 100029 || s.Up.Min != 40000 || s.Response.Max != 10000 || s.Down.Max != 50029 {
		t.Errorf("rtt %+v, up %+v, down %+v: want the log's", s.RTT, s.Up, s.Down)
	}
	// Consecutive replies: 1-2, 4-5, 7-8, ...: 10 pairs, each 1 ns apart.
	if s.IPDV.RTT.Count != 10 || s.IPDV.RTT.Max != 1 || s.IPDV.Up.Max != 0 {
		t.Errorf("ipdv %+v, want 10 values of 1ns", s.IPDV)
	}
	// Intervals from the first probe's send time; the late reply, whose
	// send time the log does not have, in the last.
	if ivs := f.Result.Intervals; len(ivs) != 3 || ivs[0].Counts.Sent != 10 || ivs[0].Counts.Duplicates != 2 || ivs[2].Counts.Late != 1 ||
		ivs[0].Start != 0 || ivs[2].End != 29*time.Millisecond {
		t.Errorf("intervals %+v, want 3 of 10 probes, the duplicates in the first, the late reply in the last", ivs)
	}
	if f.Result.ReflectorCount != "" || c.LostUp+c.LostDown != 0 {
		t.Errorf("reflector count %q, lost %d up %d down: a log does not say", f.Result.ReflectorCount, c.LostUp, c.LostDown)
	}
}

// TestProbeLogBounded: past MaxProbes, no probes are kept; past maxOpen
// intervals open, a line for a closed one is still counted in it.
func TestProbeLogBounded(t *testing.T) {
	f, err := ReadFrom(context.Background(), strings.NewReader(logLines(3000)), "x.csv", Options{Interval: time.Millisecond, MaxProbes: 100})
	if err != nil {
		t.Fatal(err)
	}
	if f.Probes != nil || len(f.Result.Intervals) != 3000 {
		t.Errorf("%d probes kept, %d intervals; want none and 3000", len(f.Probes), len(f.Result.Intervals))
	}
	// The duplicate of probe 1 came at the end: its interval was closed.
	if iv := f.Result.Intervals[0]; iv.Counts.Duplicates != 1 || iv.Counts.Sent != 1 {
		t.Errorf("first interval %+v: want its probe and the duplicate counted", iv.Counts)
	}
	if !strings.Contains(strings.Join(f.Notes, "\n"), "none kept") || !strings.Contains(strings.Join(f.Notes, "\n"), "after their interval") {
		t.Errorf("notes %q: want the probes' limit and the lines after their interval", f.Notes)
	}
}

// TestReadErrors: what is not a volley result is an error naming the
// file, the line and the field where known, and why.
func TestReadErrors(t *testing.T) {
	doc, err := os.ReadFile("testdata/run.json")
	if err != nil {
		t.Fatal(err)
	}
	cut := string(doc[:len(doc)/2])
	tests := []struct {
		name, in string
		is       error
		want     string
	}{
		{"empty", "", ErrEmpty, "f: empty file"},
		{"blank", " \n\n", ErrEmpty, "f: empty file"},
		{"truncated document", cut, ErrNotVolley, fmt.Sprintf("f: line %d: not a volley result: the JSON ends before it closes", strings.Count(cut, "\n")+1)},
		{"not JSON", "{\n  \"a\": 1,\n  x\n}", ErrNotVolley, "f: line 3: not a volley result: invalid character 'x'"},
		{"wrong type", "{\n \"tool\": \"volley\",\n \"schema_version\": \"2\"}", ErrNotVolley, "f: line 3: schema_version: not a volley result: a JSON string where volley writes int"},
		{"other tool", `{"tool": "irtt", "schema_version": 1}`, ErrNotVolley, `f: line 1: not a volley result: its tool is "irtt"`},
		{"newer", `{"tool": "volley", "schema_version": 99}`, ErrNewer, "f: line 1: written by a newer volley: schema_version 99"},
		{"unknown line", "{\"type\":\"interval\"}\n{\"type\":\"foo\"}\n", ErrNotVolley, `f: line 2: type: not a volley result: "foo"`},
		{"after result", "{\"type\":\"result\",\"tool\":\"volley\",\"schema_version\":2}\n{\"type\":\"interval\"}\n", nil, "f: line 2: more after the result line"},
		{"bad line", "{\"type\":\"interval\"}\n\n{\"type\":\"interval\",\"end_ns\":\"x\"}\n", ErrNotVolley, "f: line 3: end_ns: not a volley result"},
		{"reflector log", "peer,session,seq,t2_ns,t3_ns,t2_kernel_ns,t3_kernel_ns,hold_ns,response_ns,response_kernel_ns\n", ErrReflectorLog, "f: line 1: this is the reflector's probe log"},
		{"other CSV", "a,b\n1,2\n", ErrNotVolley, "f: line 1: not a volley result: neither"},
		{"older log", "flow,seq,status,t1_ns\n", ErrNotVolley, "f: line 1: not a volley result: a probe log whose columns"},
		{"bad number", header + "1,1,received,1,2,3,4,0,3,1,1,1,,,,,,,,\n1,2,lost,12x,0,0,0,0,,,,,,,,,,,,\n", ErrNotVolley, `f: line 3: t1_ns: not a volley result: "12x" is not a whole number`},
		{"bad status", header + "1,1,gone,1,2,3,4,0,3,1,1,1,,,,,,,,\n", ErrNotVolley, `f: line 2: status: not a volley result: "gone"`},
		{"short line", header + "1,1,lost,1\n", ErrNotVolley, "f: line 2: not a volley result: want the 20 columns"},
		{"seq 0", header + "1,0,lost,1,0,0,0,0,,,,,,,,,,,,\n", ErrNotVolley, "f: line 2: seq: not a volley result: seq 0"},
		{"no send time", header + "1,1,received,,0,0,0,0,,,,,,,,,,,,\n", ErrNotVolley, "f: line 2: t1_ns: not a volley result: a received probe without its send time"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := ReadFrom(context.Background(), strings.NewReader(tt.in), "f", Options{})
			if err == nil || f != nil || !strings.HasPrefix(err.Error(), tt.want) || (tt.is != nil && !errors.Is(err, tt.is)) {
				t.Errorf("ReadFrom(%.40q) = %v, %v; want an error starting %q (%v)", tt.in, f, err, tt.want, tt.is)
			}
		})
	}
}

// TestReadFile: a missing file and a directory are errors naming them; the
// reflector's log says what it is.
func TestReadFile(t *testing.T) {
	dir := t.TempDir()
	for _, tt := range []struct{ path, want string }{
		{filepath.Join(dir, "none.json"), filepath.Join(dir, "none.json") + ": no such file or directory"},
		{filepath.Join(dir, "a\x1b[2Jb.json"), filepath.Join(dir, "a\ufffd[2Jb.json") + ": no such file or directory"},
		{dir, dir + ": is a directory"},
		{"testdata/reflector.csv", "testdata/reflector.csv: line 1: this is the reflector's probe log (volley server --log)"},
	} {
		if _, err := Read(context.Background(), tt.path, Options{}); err == nil || !strings.HasPrefix(err.Error(), tt.want) {
			t.Errorf("Read(%s) = %v, want %q", tt.path, err, tt.want)
		}
	}
}

// TestTruncatedStream: a stream without its result line gives its
// intervals, with ErrTruncated.
func TestTruncatedStream(t *testing.T) {
	data, err := os.ReadFile("testdata/run.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(data), "\n")
	cut := strings.Join(lines[:len(lines)-2], "") // the result line and the empty tail
	f, err := ReadFrom(context.Background(), strings.NewReader(cut), "r.jsonl", Options{})
	if !errors.Is(err, ErrTruncated) || f == nil || len(f.Result.Intervals) != len(lines)-2 || f.Result.Summary.Counts.Sent == 0 {
		t.Fatalf("ReadFrom(cut stream) = %+v, %v; want %d intervals and ErrTruncated", f, err, len(lines)-2)
	}
	if want := fmt.Sprintf("r.jsonl: line %d: the stream ends", len(lines)-2); !strings.HasPrefix(err.Error(), want) {
		t.Errorf("error %q, want it to start %q", err, want)
	}
}

// TestPercentiles: --percentiles from a document come from its figures,
// or its distribution; one in neither is an error that names it.
func TestPercentiles(t *testing.T) {
	f := read(t, "run.json", Options{Percentiles: []float64{50, 99.95, 100}})
	doc := read(t, "run.json", Options{}).Result
	rtt := f.Result.Summary.RTT.Percentiles
	want := []result.Percentile{{P: 50, Value: doc.Summary.RTT.Percentiles[0].Value}, {P: 99.95, Value: doc.Distribution.RTT[14].Value}, {P: 100, Value: doc.Summary.RTT.Max}}
	if doc.Distribution.RTT[14].P != 99.95 || !reflect.DeepEqual(rtt, want) || !reflect.DeepEqual(f.Result.Config.Percentiles, []float64{50, 99.95, 100}) {
		t.Errorf("rtt percentiles %v, want %v", rtt, want)
	}
	if got := f.Result.Summary.Response.Percentiles; len(got) != 2 {
		t.Errorf("response percentiles %v: want p50 and p100 (p99.95 not saved)", got)
	}
	_, err := Read(context.Background(), "testdata/run.json", Options{Percentiles: []float64{50, 99.94}})
	if err == nil || !strings.Contains(err.Error(), "run.json: --percentiles p50, p99.94: the saved rtt has no p99.94") {
		t.Errorf("Read with --percentiles 99.94 = %v, want an error naming p99.94", err)
	}
}
