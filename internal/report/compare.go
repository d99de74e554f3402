package report

import (
	"encoding/csv"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/volley-net/volley/internal/result"
)

// Labelled is a run and the label it is shown under (volley report: its
// file's name).
type Labelled struct {
	Label  string
	Result *result.Result
}

// comparedPercentiles are the percentiles of runs: the first run's, then
// any other run's that the first lacks, in their order.
func comparedPercentiles(runs []Labelled) []float64 {
	var out []float64
	for _, r := range runs {
		for _, p := range r.Result.Config.Percentiles {
			if !slices.Contains(out, p) {
				out = append(out, p)
			}
		}
	}
	return out
}

// WriteComparison writes runs side by side, a column a run: a line per
// run saying what it measured, then each delay's statistics and
// percentiles (RTT, and response, up and down where a run has them), each
// with its ratio to the first run's (1.23×), then the counts and loss.
// A run that lacks a figure shows "-".
func WriteComparison(w io.Writer, runs []Labelled) error {
	var b strings.Builder
	b.WriteString("runs compared, each against the first:\n")
	for i, r := range runs {
		c := r.Result.Config
		s := r.Result.Summary
		what := runName(c)
		if c.Transport == "" {
			what = "rebuilt from a probe log"
		}
		fmt.Fprintf(&b, "  %d. %s: %s", i+1, r.Label, what)
		if !r.Result.Start.IsZero() {
			fmt.Fprintf(&b, ", %s", r.Result.Start.UTC().Format("2006-01-02 15:04:05 UTC"))
		}
		fmt.Fprintf(&b, ", %d probes over %s\n", s.Counts.Sent, Duration(s.End-s.Start))
	}
	var rows []comparedRow
	for _, m := range measures(runs) {
		for _, st := range statsOf(comparedPercentiles(runs)) {
			if r, ok := compareStat(runs, m, st); ok {
				rows = append(rows, r)
			}
		}
	}
	rows = append(rows, comparedCounts(runs)...)
	writeCompared(&b, runs, rows)
	_, err := io.WriteString(w, b.String())
	return err
}

// measure is a delay the comparison shows.
type measure struct {
	name string
	of   func(*result.Result) result.Latency
}

// measures are the delays some run has values of.
func measures(runs []Labelled) []measure {
	all := []measure{
		{"rtt", func(r *result.Result) result.Latency { return r.Summary.RTT }},
		{"response", func(r *result.Result) result.Latency { return r.Summary.Response }},
		{"up", func(r *result.Result) result.Latency { return r.Summary.Up }},
		{"down", func(r *result.Result) result.Latency { return r.Summary.Down }},
	}
	var out []measure
	for _, m := range all {
		for _, r := range runs {
			if m.of(r.Result).Count > 0 {
				out = append(out, m)
				break
			}
		}
	}
	return out
}

// stat is a statistic of a latency.
type stat struct {
	name string
	of   func(result.Latency) (time.Duration, bool)
}

// statsOf are the statistics compared: min, mean, the percentiles, max.
func statsOf(pcts []float64) []stat {
	some := func(l result.Latency, v time.Duration) (time.Duration, bool) { return v, l.Count > 0 }
	out := []stat{
		{"min", func(l result.Latency) (time.Duration, bool) { return some(l, l.Min) }},
		{"mean", func(l result.Latency) (time.Duration, bool) { return some(l, l.Mean) }},
	}
	for _, p := range pcts {
		out = append(out, stat{Percent(p), func(l result.Latency) (time.Duration, bool) {
			if l.Count == 0 {
				return 0, false
			}
			for _, q := range l.Percentiles {
				if q.P == p {
					return q.Value, true
				}
			}
			return 0, false
		}})
	}
	return append(out, stat{"max", func(l result.Latency) (time.Duration, bool) { return some(l, l.Max) }})
}

// comparedRow is a row of the comparison: its name, a value per run and,
// for all runs but the first, its ratio to the first's ("" for none).
type comparedRow struct {
	name           string
	values, ratios []string
}

// compareStat is the row of statistic st of measure m; false when no run
// has it.
func compareStat(runs []Labelled, m measure, st stat) (comparedRow, bool) {
	r := comparedRow{name: m.name + " " + st.name, values: make([]string, len(runs)), ratios: make([]string, len(runs))}
	var first time.Duration
	var firstOK, some bool
	for i, run := range runs {
		v, ok := st.of(m.of(run.Result))
		r.values[i] = "-"
		if !ok {
			continue
		}
		some = true
		r.values[i] = Duration(v)
		if i == 0 {
			first, firstOK = v, true
		} else if firstOK && first > 0 && v >= 0 {
			r.ratios[i] = ratio(float64(v)/float64(first)) + "×"
		}
	}
	return r, some
}

// ratio formats a ratio with three significant digits (0.00239, 1.50,
// 123), and no fewer whole digits than it has (12345).
func ratio(x float64) string {
	if x <= 0 || math.IsInf(x, 0) || math.IsNaN(x) {
		return strconv.FormatFloat(x, 'f', -1, 64)
	}
	digits := max(2-int(math.Floor(math.Log10(x))), 0)
	s := strconv.FormatFloat(x, 'f', digits, 64)
	// Rounding up may add a digit (9.996 to 10.00): take it off.
	if r, _ := strconv.ParseFloat(s, 64); digits > 0 && math.Floor(math.Log10(r)) > math.Floor(math.Log10(x)) {
		s = strconv.FormatFloat(x, 'f', digits-1, 64)
	}
	return s
}

// writeCompared writes rows under a head of the runs' labels, each
// column as wide as it needs.
func writeCompared(b *strings.Builder, runs []Labelled, rows []comparedRow) {
	width := func(s string) int { return utf8.RuneCountInString(s) }
	pad := func(s string, n int) string { return strings.Repeat(" ", max(n-width(s), 0)) + s }
	nameW := 0
	for _, r := range rows {
		nameW = max(nameW, width(r.name))
	}
	valW, ratioW := make([]int, len(runs)), make([]int, len(runs))
	for i, run := range runs {
		valW[i] = width(run.Label)
		for _, r := range rows {
			valW[i] = max(valW[i], width(r.values[i]))
			ratioW[i] = max(ratioW[i], width(r.ratios[i]))
		}
	}
	line := func(name string, cells func(i int) (string, string)) {
		l := name + strings.Repeat(" ", nameW-width(name))
		for i := range runs {
			v, ratio := cells(i)
			l += "  " + pad(v, valW[i])
			if ratioW[i] > 0 {
				l += " " + pad(ratio, ratioW[i])
			}
		}
		b.WriteString(strings.TrimRight(l, " ") + "\n")
	}
	line("", func(i int) (string, string) { return runs[i].Label, "" })
	for _, r := range rows {
		line(r.name, func(i int) (string, string) { return r.values[i], r.ratios[i] })
	}
}

// comparedCounts are the rows of the runs' counts and loss.
func comparedCounts(runs []Labelled) []comparedRow {
	counts := []struct {
		name string
		of   func(c result.Counts) string
	}{
		{"sent", func(c result.Counts) string { return fmt.Sprint(c.Sent) }},
		{"received", func(c result.Counts) string { return fmt.Sprint(c.Received) }},
		{"lost", func(c result.Counts) string { return fmt.Sprint(c.Lost) }},
		{"loss", func(c result.Counts) string { return fmt.Sprintf("%.3f%%", c.LossPercent) }},
		{"lost up", func(c result.Counts) string { return fmt.Sprint(c.LostUp) }},
		{"lost down", func(c result.Counts) string { return fmt.Sprint(c.LostDown) }},
		{"duplicates", func(c result.Counts) string { return fmt.Sprint(c.Duplicates) }},
		{"reordered", func(c result.Counts) string { return fmt.Sprint(c.Reordered) }},
		{"late", func(c result.Counts) string { return fmt.Sprint(c.Late) }},
	}
	var rows []comparedRow
	for _, c := range counts {
		r := comparedRow{name: c.name, values: make([]string, len(runs)), ratios: make([]string, len(runs))}
		for i, run := range runs {
			r.values[i] = c.of(run.Result.Summary.Counts)
			if (c.name == "lost up" || c.name == "lost down") && run.Result.ReflectorCount == "" {
				r.values[i] = "?" // a probe log does not say
			}
		}
		rows = append(rows, r)
	}
	return rows
}

// WriteCSV writes the runs' intervals as one CSV table, for a
// spreadsheet: a header row, then a row per interval of each run and a
// last row with its summary (interval "summary"). Times are seconds from
// the end of warm-up, delays nanoseconds; the percentile columns are
// those of the runs (see WriteComparison), empty where a run lacks one.
func WriteCSV(w io.Writer, runs []Labelled) error {
	pcts := comparedPercentiles(runs)
	head := []string{"run", "interval", "start_s", "end_s", "sent", "received", "lost", "lost_up", "lost_down", "loss_percent",
		"duplicates", "reordered", "late", "probes_per_sec_up", "probes_per_sec_down", "rtt_count", "rtt_min_ns", "rtt_mean_ns", "rtt_stdev_ns"}
	for _, p := range pcts {
		head = append(head, "rtt_"+Percent(p)+"_ns")
	}
	head = append(head, "rtt_max_ns", "response_mean_ns", "up_mean_ns", "down_mean_ns", "ipdv_rtt_mean_ns")
	cw := csv.NewWriter(w)
	if err := cw.Write(head); err != nil {
		return err
	}
	for _, r := range runs {
		for i, iv := range r.Result.Intervals {
			if err := cw.Write(csvRow(r.Label, strconv.Itoa(i+1), iv, pcts)); err != nil {
				return err
			}
		}
		if err := cw.Write(csvRow(r.Label, "summary", r.Result.Summary, pcts)); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

// csvRow is interval iv's row of WriteCSV.
func csvRow(label, name string, iv result.Interval, pcts []float64) []string {
	c := iv.Counts
	u := func(v uint64) string { return strconv.FormatUint(v, 10) }
	f := func(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
	ns := func(l result.Latency, v time.Duration) string {
		if l.Count == 0 {
			return ""
		}
		return strconv.FormatInt(int64(v), 10)
	}
	row := []string{label, name, f(iv.Start.Seconds()), f(iv.End.Seconds()), u(c.Sent), u(c.Received), u(c.Lost), u(c.LostUp), u(c.LostDown),
		f(c.LossPercent), u(c.Duplicates), u(c.Reordered), u(c.Late), f(iv.Throughput.ProbesPerSecUp), f(iv.Throughput.ProbesPerSecDown),
		strconv.FormatInt(iv.RTT.Count, 10), ns(iv.RTT, iv.RTT.Min), ns(iv.RTT, iv.RTT.Mean), ns(iv.RTT, iv.RTT.Stdev)}
	for _, p := range pcts {
		cell := ""
		for _, q := range iv.RTT.Percentiles {
			if q.P == p {
				cell = ns(iv.RTT, q.Value)
			}
		}
		row = append(row, cell)
	}
	return append(row, ns(iv.RTT, iv.RTT.Max), ns(iv.Response, iv.Response.Mean), ns(iv.Up, iv.Up.Mean), ns(iv.Down, iv.Down.Mean),
		ns(iv.IPDV.RTT, iv.IPDV.RTT.Mean))
}
