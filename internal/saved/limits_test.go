package saved

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode"

	"github.com/volley-net/volley/internal/result"
)

// countingReader serves n bytes of c, counting what was read.
type countingReader struct {
	c    byte
	n    int64
	read int64
}

func (r *countingReader) Read(p []byte) (int, error) {
	if r.read >= r.n {
		return 0, io.EOF
	}
	p = p[:min(int64(len(p)), r.n-r.read)]
	for i := range p {
		p[i] = r.c
	}
	r.read += int64(len(p))
	return len(p), nil
}

// TestLongLine: a line longer than MaxLine (a file of zeros, a stream's or
// a log's line) is an error naming its line, read no further than the
// limit and a buffer beyond it; a document on one long line is read.
func TestLongLine(t *testing.T) {
	ctx := context.Background()
	const slack = 1 << 20
	zeros := &countingReader{c: 0, n: 4 * MaxLine}
	f, err := ReadFrom(ctx, zeros, "zero", Options{})
	if f != nil || !errors.Is(err, ErrNotVolley) || !strings.HasPrefix(err.Error(), "zero: line 1: not a volley result: a line longer than 16 MiB") {
		t.Errorf("ReadFrom(zeros) = %v, %v; want line 1 too long", f, err)
	}
	if zeros.read > MaxLine+slack {
		t.Errorf("read %d bytes of zeros, want at most %d", zeros.read, MaxLine+slack)
	}
	for _, tt := range []struct{ name, head, want string }{
		{"stream", "{\"type\":\"interval\"}\n", "s: line 2: not a volley result: a line longer"},
		{"log", header, "s: line 2: not a volley result: a line longer"},
	} {
		long := &countingReader{c: '1', n: 4 * MaxLine}
		_, err := ReadFrom(ctx, io.MultiReader(strings.NewReader(tt.head), long), "s", Options{})
		if err == nil || !strings.HasPrefix(err.Error(), tt.want) || long.read > MaxLine+slack {
			t.Errorf("%s with a long line 2: %v after %d bytes; want %q within %d", tt.name, err, long.read, tt.want, MaxLine+slack)
		}
	}
	doc := `{"schema_version":2,"tool":"volley","config":{"transport":"udp"},"version":"` + strings.Repeat("v", MaxLine+10) + `","intervals":[{"counts":{"sent":3}}]}`
	f, err = ReadFrom(ctx, strings.NewReader(doc), "d", Options{})
	if err != nil || len(f.Result.Version) != MaxLine+10 || len(f.Result.Intervals) != 1 || f.Result.Intervals[0].Counts.Sent != 3 {
		t.Errorf("a document on one line longer than MaxLine: %v", err)
	}
}

// TestManyIntervals: a file of more than MaxIntervals intervals keeps
// MaxIntervals at most, their counts whole, and says so.
func TestManyIntervals(t *testing.T) {
	const n = MaxIntervals + MaxIntervals/2
	iv := `{"counts":{"sent":2,"received":1,"lost":1}}`
	var doc, stream strings.Builder
	doc.WriteString(`{"schema_version":2,"tool":"volley","config":{"transport":"udp"},"intervals":[`)
	for i := range n {
		if i > 0 {
			doc.WriteByte(',')
		}
		doc.WriteString(iv)
		stream.WriteString(`{"type":"interval",` + iv[1:] + "\n")
	}
	doc.WriteString("]}")
	stream.WriteString(`{"type":"result","schema_version":2,"tool":"volley","config":{"transport":"udp"}}` + "\n")
	for _, in := range []struct{ name, data string }{{"document", doc.String()}, {"stream", stream.String()}} {
		f, err := ReadFrom(context.Background(), strings.NewReader(in.data), "f", Options{})
		if err != nil {
			t.Fatalf("%s: %v", in.name, err)
		}
		var sent uint64
		for _, iv := range f.Result.Intervals {
			sent += iv.Counts.Sent
		}
		if k := len(f.Result.Intervals); k > MaxIntervals || k < MaxIntervals/2 || sent != 2*n {
			t.Errorf("%s: kept %d intervals of %d, %d sent; want at most %d, and all %d sent", in.name, k, n, sent, MaxIntervals, 2*n)
		}
		if notes := strings.Join(f.Notes, "\n"); !strings.Contains(notes, fmt.Sprintf("%d intervals read: past %d, neighbours were merged", n, MaxIntervals)) {
			t.Errorf("%s: notes %q: want the merge said", in.name, notes)
		}
	}
}

// TestNonsense: values volley never writes are errors naming where.
func TestNonsense(t *testing.T) {
	pcts := func(n int) string {
		var b strings.Builder
		for i := range n {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `{"p":%v,"value_ns":1}`, float64(i)/float64(n))
		}
		return b.String()
	}
	doc := func(iv string) string {
		return `{"schema_version":2,"tool":"volley","intervals":[{},{},{},` + iv + "]}"
	}
	tests := []struct{ name, in, want string }{
		{"many percentiles", doc(`{"rtt":{"count":1,"percentiles":[` + pcts(MaxPercentiles+1) + `]}}`), "f: line 1: intervals[3].rtt.percentiles: not a volley result: 101 percentiles; volley writes at most 100"},
		{"long ladder", `{"schema_version":2,"tool":"volley","distribution":{"rtt":[` + pcts(10000) + `]}}`, "f: distribution.rtt: not a volley result: 10000 percentiles"},
		{"p150", doc(`{"rtt":{"count":1,"percentiles":[{"p":50},{"p":150}]}}`), "f: line 1: intervals[3].rtt.percentiles[1].p: not a volley result: percentile 150, outside 0 to 100"},
		{"p-3", `{"schema_version":2,"tool":"volley","summary":{"up":{"percentiles":[{"p":-3}]}}}`, "f: summary.up.percentiles[0].p: not a volley result: percentile -3"},
		{"end before start", doc(`{"start_ns":2000000000,"end_ns":1000000000}`), "f: line 1: intervals[3].end_ns: not a volley result: an interval that ends"},
		{"negative start", doc(`{"start_ns":-1000000000,"end_ns":0}`), "f: line 1: intervals[3].start_ns: not a volley result: an interval from -1000000000 ns"},
		{"negative duration", `{"schema_version":2,"tool":"volley","config":{"duration_ns":-1000000000}}`, "f: config.duration_ns: not a volley result: a run of -1000000000 ns"},
		{"lost over sent", doc(`{"counts":{"sent":1,"lost":5}}`), "f: line 1: intervals[3].counts: not a volley result: 5 lost and 0 received of 1 sent"},
		{"received over sent", "{\"type\":\"interval\"}\n{\"type\":\"interval\",\"counts\":{\"received\":5}}\n", "f: line 2: counts: not a volley result: 0 lost and 5 received of 0 sent"},
		{"summary", "{\"type\":\"result\",\"tool\":\"volley\",\"schema_version\":2,\"summary\":{\"start_ns\":5,\"end_ns\":1}}\n", "f: line 1: summary.end_ns: not a volley result"},
		{"negative rtt", header + "1,1,received,10,2,3,4,0,-6,1,1,1,,,,,,,,\n", "f: line 2: rtt_ns: not a volley result: -6"},
		{"negative kernel rtt", header + "1,1,received,10,2,3,14,0,4,1,1,1,,,,,-3,,,\n", "f: line 2: rtt_kernel_ns: not a volley result: -3"},
		{"time before 1970", header + "1,1,received,-9223372036854775803,2,3,4,0,6,1,1,1,,,,,,,,\n", "f: line 2: t1_ns: not a volley result: -9223372036854775803: a time before 1970"},
		{"negative min rtt", doc(`{"rtt":{"count":1,"min_ns":-5}}`), "f: line 1: intervals[3].rtt.min_ns: not a volley result: -5"},
		{"negative timeout", `{"schema_version":2,"tool":"volley","config":{"transport":"udp","timeout_ns":-1}}`, "f: config.timeout_ns: not a volley result: -1"},
		{"negative size", `{"schema_version":2,"tool":"volley","config":{"transport":"udp","size":-1}}`, "f: config.size: not a volley result: -1"},
		{"no transport", `{"schema_version":2,"tool":"volley"}`, "f: config.transport: not a volley result: a document without its transport"},
		{"result line without transport", "{\"type\":\"result\",\"tool\":\"volley\",\"schema_version\":2}\n", "f: config.transport: not a volley result: a result line without its transport"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := ReadFrom(context.Background(), strings.NewReader(tt.in), "f", Options{})
			if err == nil || f != nil || !strings.HasPrefix(err.Error(), tt.want) || !errors.Is(err, ErrNotVolley) {
				t.Errorf("ReadFrom = %v, %v; want an error starting %q", f, err, tt.want)
			}
		})
	}
	// One-way delays may be negative (the clocks' offset).
	if _, err := ReadFrom(context.Background(), strings.NewReader(header+"1,1,received,10,2,3,14,0,4,1,-5,9,,,,,,,,\n"), "f", Options{}); err != nil {
		t.Errorf("a negative up delay: %v, want it read", err)
	}
}

// fill sets every string reachable from v to s, making one of each
// pointer, slice and map element on the way, and returns how many it set.
func fill(v reflect.Value, s string) int {
	switch v.Kind() {
	case reflect.String:
		v.SetString(s)
		return 1
	case reflect.Pointer:
		if v.IsNil() {
			v.Set(reflect.New(v.Type().Elem()))
		}
		return fill(v.Elem(), s)
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 1, 1))
		return fill(v.Index(0), s)
	case reflect.Array:
		n := 0
		for i := range v.Len() {
			n += fill(v.Index(i), s)
		}
		return n
	case reflect.Struct:
		n := 0
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				n += fill(v.Field(i), s)
			}
		}
		return n
	}
	return 0
}

// strings lists every string reachable from v.
func allStrings(v reflect.Value, out *[]string) {
	switch v.Kind() {
	case reflect.String:
		*out = append(*out, v.String())
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			allStrings(v.Elem(), out)
		}
	case reflect.Slice, reflect.Array:
		for i := range v.Len() {
			allStrings(v.Index(i), out)
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				allStrings(v.Field(i), out)
			}
		}
	}
}

// TestControlCharacters: a control character in any string of a result
// (every one found by reflection: a document's and a stream's) is
// replaced, and a note says so; a clean file has no such note.
func TestControlCharacters(t *testing.T) {
	const evil = "a\x1b]0;pwned\x07\x1b[2J\t\n\x7f\u009bz"
	res := new(result.Result)
	n := fill(reflect.ValueOf(res), evil)
	res.Tool, res.SchemaVersion = "volley", result.SchemaVersion
	if n < 20 {
		t.Fatalf("filled %d strings: the result should have more", n)
	}
	doc, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	line := append([]byte(`{"type":"result",`), doc[1:]...)
	ivLine, err := json.Marshal(res.Intervals[0])
	if err != nil {
		t.Fatal(err)
	}
	ivLine = append([]byte(`{"type":"interval",`), ivLine[1:]...)
	stream := bytes.Join([][]byte{ivLine, line, nil}, []byte("\n"))
	for _, in := range []struct {
		name string
		data []byte
	}{{"document", doc}, {"stream", stream}} {
		f, err := ReadFrom(context.Background(), bytes.NewReader(in.data), "f", Options{})
		if err != nil {
			t.Fatalf("%s: %v", in.name, err)
		}
		var got []string
		allStrings(reflect.ValueOf(f.Result), &got)
		replaced := 0
		for _, s := range got {
			if strings.ContainsFunc(s, unicode.IsControl) {
				t.Errorf("%s: %q survived", in.name, s)
			}
			if strings.Contains(s, "a\ufffd]0;pwned") {
				replaced++
			}
		}
		if replaced < n-1 || !strings.Contains(strings.Join(f.Notes, "\n"), "control characters") {
			t.Errorf("%s: %d strings replaced of %d; notes %q", in.name, replaced, n, f.Notes)
		}
	}
	if f := read(t, "run.json", Options{}); len(f.Notes) != 0 {
		t.Errorf("a clean document: notes %q, want none", f.Notes)
	}
}

// TestCancelled: a context that ended stops reading.
func TestCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, name := range []string{"run.json", "run.jsonl", "run.csv"} {
		f, err := Read(ctx, "testdata/"+name, Options{})
		if !errors.Is(err, context.Canceled) || f != nil {
			t.Errorf("Read(%s) with a cancelled context = %v, %v; want context.Canceled", name, f, err)
		}
	}
}

// TestProbeLogIntervalsBounded: a log rebuilt into more intervals than it
// keeps merges them as it reads, its counts whole, a line after its
// interval counted in the merged one, and says so.
func TestProbeLogIntervalsBounded(t *testing.T) {
	defer func(n int) { logIntervals = n }(logIntervals)
	logIntervals = 100
	f, err := ReadFrom(context.Background(), strings.NewReader(logLines(3000)), "x.csv", Options{Interval: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ivs := f.Result.Intervals
	var sent, dup uint64
	for i, iv := range ivs {
		sent += iv.Counts.Sent
		dup += iv.Counts.Duplicates
		if i > 0 && iv.Start < ivs[i-1].End {
			t.Fatalf("interval %d starts at %v, before the one before ends (%v)", i, iv.Start, ivs[i-1].End)
		}
	}
	if len(ivs) > 100 || len(ivs) < 50 || sent != 3000 || dup != 2 || ivs[0].Counts.Duplicates != 2 {
		t.Errorf("%d intervals, %d sent, %d duplicates (%d in the first); want at most 100, all 3000 sent and both duplicates in the first", len(ivs), sent, dup, ivs[0].Counts.Duplicates)
	}
	if notes := strings.Join(f.Notes, "\n"); !strings.Contains(notes, "3000 intervals rebuilt: past 100, neighbours were merged") {
		t.Errorf("notes %q: want the merge said", notes)
	}
}

// TestDocumentErrorLine: an error inside a document's value, read as a
// stream of tokens, names the line it is on.
func TestDocumentErrorLine(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"{\n \"tool\": \"volley\",\n \"intervals\": [\n  {},\n  {\n   \"rtt\": x\n  }\n ]\n}\n", "f: line 6: intervals[1]: not a volley result: invalid character 'x'"},
		{"{\n \"tool\": \"volley\",\n \"config\": {\n\n \"x\": ]}}", "f: line 5: config: not a volley result: invalid character ']'"},
		{"{\n \"tool\": \"volley\",\n \"intervals\": [\n  {},\n  {\n   \"rtt\": {\"count\": \"x\"}\n  }\n ]\n}\n", "f: line 6: intervals[1].rtt.count: not a volley result: a JSON string"},
	} {
		if _, err := ReadFrom(context.Background(), strings.NewReader(tt.in), "f", Options{}); err == nil || !strings.HasPrefix(err.Error(), tt.want) {
			t.Errorf("ReadFrom(%q) = %v, want %q", tt.in, err, tt.want)
		}
	}
}
