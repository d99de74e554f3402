package report

import (
	"bytes"
	"encoding/csv"
	"strings"
	"testing"
	"time"

	"github.com/volley-net/volley/internal/result"
)

// slower is fixture() with every RTT half again as long, no kernel
// figures, other percentiles, and a loss more.
func slower() *result.Result {
	res := userFixture()
	res.Config.Percentiles = []float64{50, 99, 99.999}
	s := &res.Summary
	rtt, _ := latency(2000, 37500*time.Nanosecond)
	s.RTT = rtt
	s.RTT.Percentiles = append(s.RTT.Percentiles[:1:1], s.RTT.Percentiles[2], result.Percentile{P: 99.999, Value: s.RTT.Max})
	s.Counts.Lost++
	s.Counts.Sent++
	s.Counts.LostUp++
	s.Counts.LossPercent = 100 * float64(s.Counts.Lost) / float64(s.Counts.Sent)
	return res
}

// TestComparison: the runs side by side, each figure with its ratio to
// the first run's; a percentile a run lacks is "-", and a rebuilt log's
// loss per direction "?".
func TestComparison(t *testing.T) {
	log := userFixture()
	log.ReflectorCount = ""
	log.Config.Transport, log.Config.Target = "", "before.csv"
	log.Summary.Response = result.Latency{}
	runs := []Labelled{{"before.json", fixture()}, {"after-a-long-name.json", slower()}, {"before.csv", log}}
	var b bytes.Buffer
	if err := WriteComparison(&b, runs); err != nil {
		t.Fatal(err)
	}
	golden(t, "compare.txt", b.Bytes())
	text := b.String()
	for _, want := range []string{"rtt p50", "1.50×", "rtt p99.999", "lost up", "?", "response min", "1.00×"} {
		if !strings.Contains(text, want) {
			t.Errorf("comparison lacks %q:\n%s", want, text)
		}
	}
}

// TestCSV: a header, a row per interval and one for the summary of each
// run, every row as long as the header.
func TestCSV(t *testing.T) {
	var b bytes.Buffer
	if err := WriteCSV(&b, []Labelled{{"a,b.json", fixture()}, {"c.json", slower()}}); err != nil {
		t.Fatal(err)
	}
	golden(t, "intervals.csv", b.Bytes())
	rows, err := csv.NewReader(&b).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1+3+3 || rows[0][0] != "run" || rows[1][0] != "a,b.json" || rows[3][1] != "summary" || rows[6][1] != "summary" {
		t.Errorf("rows %q: want a header, then 2 intervals and a summary for each run", rows)
	}
	for _, want := range []string{"rtt_p50_ns", "rtt_p99.999_ns"} {
		if !strings.Contains(strings.Join(rows[0], ","), want) {
			t.Errorf("header %q lacks %s", rows[0], want)
		}
	}
}
