package e2e

import (
	"encoding/csv"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/volley-net/volley/internal/testrelay"
	"github.com/volley-net/volley/internal/wire"
)

// TestReportProbeLog: a relay drops, duplicates, reorders and delays past
// the timeout on a known schedule between a real client and reflector;
// the client writes its JSON document and its probe log at once, and
// volley report reads both back: the document as it was, byte for byte,
// and the log rebuilt into the document's counts and figures (as the
// CSV table of both shows them side by side). Only loss per direction,
// which a probe log does not hold, differs.
func TestReportProbeLog(t *testing.T) {
	srv := startServer(t, "127.0.0.1:0", "-q")
	up := func(h wire.Header) testrelay.Action {
		return testrelay.Action{Drop: h.Seq%10 == 0, Duplicate: h.Seq%13 == 0}
	}
	down := func(h wire.Header) testrelay.Action {
		a := testrelay.Action{Drop: h.Seq%7 == 0, Duplicate: h.Seq%11 == 0, Behind: h.Seq%17 == 0}
		if h.Seq%19 == 0 {
			a.Delay = 300 * time.Millisecond // past the timeout: lost, then late
		}
		return a
	}
	relay, err := testrelay.Start(srv.addr, up, down)
	if err != nil {
		t.Fatal(err)
	}
	defer relay.Close()
	dir := t.TempDir()
	doc, log := filepath.Join(dir, "run.json"), filepath.Join(dir, "run.csv")
	r := volleyRun(t, "client", relay.Addr(), "-n", "600", "--rate", "1000", "--timeout", "100ms", "-i", "0.1", "--format", "json", "--log", log)
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	res := parseResult(t, r.stdout)
	checkCounts(t, res)
	if c := res.Summary.Counts; c.Lost == 0 || c.Duplicates == 0 || c.Reordered == 0 || c.Late == 0 {
		t.Errorf("counts %+v: want losses, duplicates, reordering and late replies to compare", c)
	}
	if err := os.WriteFile(doc, []byte(r.stdout), 0o644); err != nil {
		t.Fatal(err)
	}
	again := volleyRun(t, "report", "--format", "json", doc)
	if again.code != 0 || again.stdout != r.stdout {
		t.Errorf("volley report --format json run.json: exit %d, %s; want the document as it was", again.code, again.stderr)
	}
	table := volleyRun(t, "report", "--format", "csv", "-i", "0.1", doc, log)
	rows, err := csv.NewReader(strings.NewReader(table.stdout)).ReadAll()
	if table.code != 0 || err != nil {
		t.Fatalf("volley report --format csv: exit %d, %v: %s", table.code, err, table.stderr)
	}
	var sums [][]string
	for _, row := range rows[1:] {
		if row[1] == "summary" {
			sums = append(sums, row)
		}
	}
	if len(sums) != 2 {
		t.Fatalf("table:\n%s\nwant a summary row for each file", table.stdout)
	}
	differ := map[string]bool{"run": true, "end_s": true, "lost_up": true, "lost_down": true, "probes_per_sec_up": true, "probes_per_sec_down": true}
	for i, col := range rows[0] {
		if !differ[col] && sums[0][i] != sums[1][i] && !withinRounding(col, sums[0][i], sums[1][i]) {
			t.Errorf("%s: the log gives %s, the run %s", col, sums[1][i], sums[0][i])
		}
	}
}

// withinRounding reports whether a and b, column col's values, are a mean
// or a standard deviation 1 ns apart: moments merged in another order (the
// run's intervals into its total, the log's lines as read) round apart.
// Counts, extremes and percentiles stay exact.
func withinRounding(col, a, b string) bool {
	if !strings.HasSuffix(col, "_mean_ns") && !strings.HasSuffix(col, "_stdev_ns") {
		return false
	}
	x, errA := strconv.ParseInt(a, 10, 64)
	y, errB := strconv.ParseInt(b, 10, 64)
	return errA == nil && errB == nil && x-y >= -1 && x-y <= 1
}
