package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/volley-net/volley/internal/client"
	"github.com/volley-net/volley/internal/report"
	"github.com/volley-net/volley/internal/result"
	"github.com/volley-net/volley/internal/testschema"
)

// volleyMain runs Main with args and returns its exit code and outputs.
func volleyMain(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = Main(context.Background(), args, &out, &errOut)
	return code, out.String(), errOut.String()
}

// savedRuns makes the files of two real runs against an in-process
// reflector on loopback, in a directory of the test's: run.json with
// run.csv (--format json and --log at once), and run.jsonl.
func savedRuns(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, r := range []struct {
		out  string
		args []string
	}{
		{"run.json", []string{"--format", "json", "--log", filepath.Join(dir, "run.csv")}},
		{"run.jsonl", []string{"--format", "jsonl", "--window", "4"}},
	} {
		args := append([]string{"client", "-n", "400", "--rate", "2000", "-i", "0.05"}, r.args...)
		code, out, errOut := volleyMain(t, args...)
		if code != 0 {
			t.Fatalf("volley %s: exit %d: %s", strings.Join(args, " "), code, errOut)
		}
		if err := os.WriteFile(filepath.Join(dir, r.out), []byte(out), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// decode reads a run's JSON document or JSON lines with encoding/json
// alone (not as volley report reads them), for the result to compare with.
func decode(t *testing.T, path string) *result.Result {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	res := new(result.Result)
	if !strings.HasSuffix(path, ".jsonl") {
		if err := json.Unmarshal(data, res); err != nil {
			t.Fatal(err)
		}
		return res
	}
	var ivs []result.Interval
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		if strings.HasPrefix(line, `{"type":"result"`) {
			if err := json.Unmarshal([]byte(line), res); err != nil {
				t.Fatal(err)
			}
			continue
		}
		var iv result.Interval
		if err := json.Unmarshal([]byte(line), &iv); err != nil {
			t.Fatal(err)
		}
		ivs = append(ivs, iv)
	}
	res.Intervals = ivs
	return res
}

// TestReportRoundTrip: a run's document and stream, read back, give the
// text report of the run's result, and written in their own format again,
// the same bytes; -q gives the summary alone.
func TestReportRoundTrip(t *testing.T) {
	dir := savedRuns(t)
	for _, name := range []string{"run.json", "run.jsonl"} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(dir, name)
			res := decode(t, path)
			if len(res.Intervals) < 2 || res.Summary.Counts.Sent != 400 {
				t.Fatalf("the run made %d intervals, sent %d: want several, and 400", len(res.Intervals), res.Summary.Counts.Sent)
			}
			var want, summary bytes.Buffer
			if err := report.WriteText(&want, res); err != nil {
				t.Fatal(err)
			}
			if err := report.WriteSummary(&summary, res); err != nil {
				t.Fatal(err)
			}
			format := strings.TrimPrefix(filepath.Ext(name), ".")
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			for _, tt := range []struct {
				args []string
				want string
			}{
				{[]string{"report", path}, want.String()},
				{[]string{"report", "-q", path}, summary.String()},
				{[]string{"report", "--format", format, path}, string(data)},
			} {
				code, out, errOut := volleyMain(t, tt.args...)
				if code != 0 || out != tt.want || errOut != "" {
					t.Errorf("volley %s: exit %d, stderr %q, stdout:\n%s\nwant exit 0 and:\n%s", strings.Join(tt.args, " "), code, errOut, out, tt.want)
				}
			}
		})
	}
}

// TestReportProbeLog: the probe log of a run, rebuilt, has the run's
// counts and figures.
func TestReportProbeLog(t *testing.T) {
	dir := savedRuns(t)
	run := decode(t, filepath.Join(dir, "run.json"))
	code, out, errOut := volleyMain(t, "report", "--format", "json", "-i", "0.05", filepath.Join(dir, "run.csv"))
	if code != 0 || !strings.Contains(errOut, "note: run.csv: rebuilt from a probe log") {
		t.Fatalf("volley report --format json run.csv: exit %d, stderr %q", code, errOut)
	}
	var log result.Result
	if err := json.Unmarshal([]byte(out), &log); err != nil {
		t.Fatalf("%v:\n%s", err, out)
	}
	if err := testschema.Document([]byte(out)); err != nil {
		t.Errorf("the result rebuilt from a probe log breaks the schema: %v", err)
	}
	got, want := log.Summary, run.Summary
	gc, wc := got.Counts, want.Counts
	if gc.Sent != wc.Sent || gc.Received != wc.Received || gc.Lost != wc.Lost || gc.Late != wc.Late || gc.Duplicates != wc.Duplicates {
		t.Errorf("counts %+v, want the run's %+v", gc, wc)
	}
	for _, l := range []struct {
		name      string
		got, want result.Latency
	}{{"rtt", got.RTT, want.RTT}, {"up", got.Up, want.Up}, {"down", got.Down, want.Down}, {"response", got.Response, want.Response}} {
		if !reflect.DeepEqual(l.got.Percentiles, l.want.Percentiles) || l.got.Min != l.want.Min || l.got.Max != l.want.Max {
			t.Errorf("%s = %+v, want the run's %+v", l.name, l.got, l.want)
		}
	}
	// The intervals hold every probe. (Which interval a probe falls in can
	// differ from the run's: a client that stalls moves its intervals'
	// bounds, and a log does not say where they were.)
	var sent uint64
	for _, iv := range log.Intervals {
		sent += iv.Counts.Sent
	}
	if sent != wc.Sent || len(log.Intervals) < 2 {
		t.Errorf("%d intervals rebuilt, of %d probes; want several, of the run's %d", len(log.Intervals), sent, wc.Sent)
	}
	code, text, _ := volleyMain(t, "report", filepath.Join(dir, "run.csv"))
	for _, want := range []string{"volley probe log run.csv: 1 flow", "--- run.csv summary", "loss per direction is not known", "note: rebuilt from a probe log"} {
		if code != 0 || !strings.Contains(text, want) {
			t.Errorf("volley report run.csv: exit %d, text lacks %q:\n%s", code, want, text)
		}
	}
}

// TestReportCompare: several files are compared, each a column under its
// name; as JSON, an array of their documents.
func TestReportCompare(t *testing.T) {
	dir := savedRuns(t)
	a, b := filepath.Join(dir, "run.json"), filepath.Join(dir, "run.jsonl")
	code, out, _ := volleyMain(t, "report", a, b, filepath.Join(dir, "run.csv"))
	for _, want := range []string{"1. run.json: udp://", "2. run.jsonl: udp://", "3. run.csv: rebuilt from a probe log", "rtt p99.9", "×", "lost up"} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("volley report a b c: exit %d, lacks %q:\n%s", code, want, out)
		}
	}
	code, out, _ = volleyMain(t, "report", "--format", "json", a, b)
	var docs []result.Result
	if err := json.Unmarshal([]byte(out), &docs); code != 0 || err != nil || len(docs) != 2 || docs[1].Summary.Counts.Sent != 400 {
		t.Errorf("volley report --format json a b: exit %d, %v, %d documents", code, err, len(docs))
	}
	code, out, _ = volleyMain(t, "report", "--format", "csv", a, b)
	if rows := strings.Count(out, "\n"); code != 0 || !strings.HasPrefix(out, "run,interval,") || rows < 6 {
		t.Errorf("volley report --format csv a b: exit %d, %d rows:\n%s", code, rows, out)
	}
}

// TestReportPercentiles: --percentiles from a document come from its
// figures or its distribution; one in neither is an error naming it.
func TestReportPercentiles(t *testing.T) {
	path := filepath.Join(savedRuns(t), "run.json")
	code, out, _ := volleyMain(t, "report", "-q", "--percentiles", "50,99.95", path)
	if code != 0 || !strings.Contains(out, "p99.95") {
		t.Errorf("--percentiles 50,99.95: exit %d:\n%s", code, out)
	}
	code, _, errOut := volleyMain(t, "report", "--percentiles", "99.94", path)
	if code != ExitError || !strings.Contains(errOut, "run.json: --percentiles p99.94: the saved rtt has no p99.94") {
		t.Errorf("--percentiles 99.94: exit %d, stderr %q: want exit 1 naming p99.94", code, errOut)
	}
}

// TestReportErrors: a file volley cannot read is an error naming the file,
// and the line where there is one; no file is a usage error.
func TestReportErrors(t *testing.T) {
	dir, runs := t.TempDir(), savedRuns(t)
	doc, err := os.ReadFile(filepath.Join(runs, "run.json"))
	if err != nil {
		t.Fatal(err)
	}
	stream, err := os.ReadFile(filepath.Join(runs, "run.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(stream), "\n")
	files := map[string]string{
		"empty.json": "",
		"cut.json":   string(doc[:200]),
		"bad.csv": strings.Join([]string{strings.TrimSuffix(client.LogHeader, "\n"),
			"1,1,received,1,2,3,4,0,3,1,1,1,,,,,,,,", "1,2,lost,1x,0,0,0,0,,,,,,,,,,,,", ""}, "\n"),
		"cut.jsonl": strings.Join(lines[:len(lines)-2], ""),
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cutLine := strings.Count(string(doc[:200]), "\n") + 1
	tests := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"report"}, ExitUsage, "report needs a FILE"},
		{[]string{"report", "--format", "xml", "a"}, ExitUsage, `--format "xml"`},
		{[]string{"report", "--percentiles", "101", "a"}, ExitUsage, "--percentiles"},
		{[]string{"report", "-i", "1ms", "a"}, ExitUsage, "--report-interval"},
		{[]string{"report", "--plot", "x.gif", "a"}, ExitUsage, "--plot"},
		{[]string{"report", "--format", "iperf", "a", "b"}, ExitUsage, "give one FILE"},
		{[]string{"report", filepath.Join(dir, "none.json")}, ExitError, "none.json: no such file"},
		{[]string{"report", dir}, ExitError, dir + ": is a directory"},
		{[]string{"report", filepath.Join(dir, "empty.json")}, ExitError, "empty.json: empty file"},
		{[]string{"report", filepath.Join(dir, "cut.json")}, ExitError, "cut.json: line " + strconv.Itoa(cutLine) + ": not a volley result: the JSON ends before it closes"},
		{[]string{"report", filepath.Join(dir, "bad.csv")}, ExitError, `bad.csv: line 3: t1_ns: not a volley result: "1x" is not a whole number`},
		{[]string{"report", filepath.Join(dir, "cut.jsonl")}, ExitError, "cut.jsonl: line " + strconv.Itoa(len(lines)-2) + ": the stream ends without its result line"},
	}
	for _, tt := range tests {
		code, _, errOut := volleyMain(t, tt.args...)
		if code != tt.code || !strings.Contains(errOut, tt.want) || strings.Count(errOut, "\n") != 1 {
			t.Errorf("volley %s: exit %d, stderr %q; want exit %d, one line with %q", strings.Join(tt.args, " "), code, errOut, tt.code, tt.want)
		}
	}
	// A stream cut short: its intervals are written all the same.
	_, out, _ := volleyMain(t, "report", filepath.Join(dir, "cut.jsonl"))
	if strings.Count(out, "\n") < len(lines)-2 || !strings.HasPrefix(out, "interval ") {
		t.Errorf("volley report cut.jsonl wrote:\n%s\nwant the interval lines", out)
	}
}

// TestReportUntrusted: a saved file's text cannot write control
// characters to the terminal, and errors name the file as given.
func TestReportUntrusted(t *testing.T) {
	dir := t.TempDir()
	res := decode(t, filepath.Join(savedRuns(t), "run.json"))
	res.Config.RemoteAddr = "\u001b]0;pwned\u0007\u001b[2J"
	res.Version = "\u009b31m"
	data, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	evil := filepath.Join(dir, "evil.json")
	if err := os.WriteFile(evil, data, 0o644); err != nil {
		t.Fatal(err)
	}
	// A file's name may hold control characters too: in labels and errors.
	named := filepath.Join(dir, "x\x1b[31mname\x07.json")
	if err := os.WriteFile(named, data, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"report", evil}, {"report", evil, evil}, {"report", evil, named}, {"report", named + ".missing"}} {
		code, out, errOut := volleyMain(t, args...)
		if strings.HasSuffix(args[1], ".missing") {
			if code != ExitError || strings.ContainsAny(errOut, "\x1b\x07") || !strings.Contains(errOut, "x\ufffd[31mname\ufffd.json.missing") {
				t.Errorf("volley %q: exit %d, %q; want the name with its control characters replaced", args, code, errOut)
			}
			continue
		}
		if code != 0 || strings.ContainsAny(out+errOut, "\x1b\x07\u009b") || !strings.Contains(out, "\ufffd]0;pwned") ||
			!strings.Contains(out, "control characters in the file's text were replaced") {
			t.Errorf("volley %s: exit %d, control characters written or no note:\n%q\n%s", strings.Join(args, " "), code, out, errOut)
		}
	}
	empty := filepath.Join(dir, "sub", "empty.json")
	if err := os.Mkdir(filepath.Dir(empty), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, errOut := volleyMain(t, "report", empty); code != ExitError || errOut != "volley: "+empty+": empty file\n" {
		t.Errorf("report of an empty file: exit %d, %q; want it named as given", code, errOut)
	}
}
