package chart

import (
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/volley-net/volley/internal/report"
	"github.com/volley-net/volley/internal/result"
)

// withRun puts the run's label before a row's cells when there are
// several runs.
func withRun(runs []Run, i int, cells ...string) []string {
	if len(runs) == 1 {
		return cells
	}
	return append([]string{label(runs, i)}, cells...)
}

// percentiles are the percentiles the runs reported, in order.
func percentiles(runs []Run) []float64 {
	var ps []float64
	for _, r := range runs {
		ps = append(ps, r.Result.Config.Percentiles...)
		for _, p := range r.Result.Summary.RTT.Percentiles {
			ps = append(ps, p.P)
		}
	}
	slices.Sort(ps)
	return slices.Compact(ps)
}

// at is l's value at percentile p, "" when l has none.
func at(l result.Latency, p float64) string {
	if v, ok := l.Percentile(p); ok {
		return report.Duration(v)
	}
	return ""
}

// namedLatency is a row of the summary table.
type namedLatency struct {
	name string
	l    result.Latency
}

// summaryTable holds each run's delays over the whole run: RTT,
// response, up and down (and their estimates with the clock offset taken
// out), with the percentiles every run reported.
func summaryTable(runs []Run) table {
	ps := percentiles(runs)
	names := []string{"delay", "count", "min", "mean", "stdev"}
	for _, p := range ps {
		names = append(names, report.Percent(p))
	}
	t := table{Head: header(runs, append(names, "max")...)}
	for i, r := range runs {
		s := r.Result.Summary
		rows := []namedLatency{{"RTT", s.RTT}, {"response", s.Response}, {"up", s.Up}, {"down", s.Down}}
		if co := r.Result.ClockOffset; co != nil && co.EstimatedUp != nil && co.EstimatedDown != nil {
			rows = append(rows, namedLatency{"up (offset estimated)", *co.EstimatedUp},
				namedLatency{"down (offset estimated)", *co.EstimatedDown})
		}
		for _, row := range rows {
			if row.l.Count == 0 {
				continue
			}
			l := row.l
			cells := []string{row.name, strconv.FormatInt(l.Count, 10), report.Duration(l.Min),
				report.Duration(l.Mean), report.Duration(l.Stdev)}
			for _, p := range ps {
				cells = append(cells, at(l, p))
			}
			t.Rows = append(t.Rows, withRun(runs, i, append(cells, report.Duration(l.Max))...))
		}
	}
	return t
}

// header is a table's header, with a "run" column first when there are
// several runs.
func header(runs []Run, names ...string) []string {
	if len(runs) == 1 {
		return names
	}
	return append([]string{"run"}, names...)
}

// countsTable holds each run's probe counts.
func countsTable(runs []Run) table {
	t := table{Head: header(runs, "sent", "received", "lost", "lost up", "lost down", "loss",
		"duplicates", "reordered", "late", "errors")}
	for i, r := range runs {
		c := r.Result.Summary.Counts
		u := func(v uint64) string { return strconv.FormatUint(v, 10) }
		t.Rows = append(t.Rows, withRun(runs, i, u(c.Sent), u(c.Received), u(c.Lost), u(c.LostUp), u(c.LostDown),
			strconv.FormatFloat(c.LossPercent, 'f', 3, 64)+"%", u(c.Duplicates), u(c.Reordered), u(c.Late), u(c.Errors)))
	}
	return t
}

// intervalsTable holds a row per interval of each run: its time, counts,
// delay percentiles (RTT, or up for one-way runs) and throughput.
func intervalsTable(runs []Run) table {
	ps := percentiles(runs)
	var rtt, up bool
	for _, r := range runs {
		rtt = rtt || !r.Result.Config.OneWay
		up = up || r.Result.Config.OneWay
	}
	names := []string{"start (s)", "end (s)", "sent", "received", "lost up", "lost down"}
	for _, k := range []struct {
		on   bool
		name string
	}{{rtt, "RTT"}, {up, "up"}} {
		for _, p := range ps {
			if k.on {
				names = append(names, k.name+" "+report.Percent(p))
			}
		}
	}
	t := table{Head: header(runs, append(names, "up (bit/s)", "down (bit/s)")...)}
	for i, r := range runs {
		for _, iv := range r.Result.Intervals {
			c := iv.Counts
			u := func(v uint64) string { return strconv.FormatUint(v, 10) }
			cells := []string{report.Seconds(iv.Start), report.Seconds(iv.End), u(c.Sent), u(c.Received), u(c.LostUp), u(c.LostDown)}
			for _, k := range []struct {
				on, mine bool
				l        result.Latency
			}{{rtt, !r.Result.Config.OneWay, iv.RTT}, {up, r.Result.Config.OneWay, iv.Up}} {
				for _, p := range ps {
					switch {
					case k.on && k.mine:
						cells = append(cells, at(k.l, p))
					case k.on:
						cells = append(cells, "")
					}
				}
			}
			cells = append(cells, report.SI(iv.Throughput.BitsPerSecUp), report.SI(iv.Throughput.BitsPerSecDown))
			t.Rows = append(t.Rows, withRun(runs, i, cells...))
		}
	}
	return t
}

// configTable holds the run's configuration, a row per field that is set
// (named as in the JSON document, nested fields with a dot), a column per
// run, after what made and ended the run.
func configTable(runs []Run) table {
	t := table{Head: []string{"setting"}}
	var order []string
	values := map[string][]string{}
	set := func(i int, name, v string) {
		if v == "" {
			return
		}
		if _, ok := values[name]; !ok {
			order = append(order, name)
			values[name] = make([]string, len(runs))
		}
		values[name][i] = v
	}
	for i, r := range runs {
		t.Head = append(t.Head, label(runs, i))
		res := r.Result
		set(i, "volley version", version(res))
		set(i, "start", date(res))
		set(i, "stopped", res.Stopped)
		set(i, "reflector count", res.ReflectorCount)
		set(i, "error", res.Error)
		flatten("", reflect.ValueOf(res.Config), func(name, v string) { set(i, name, v) })
	}
	if len(runs) == 1 {
		t.Head[1] = "value"
	}
	for _, name := range order {
		t.Rows = append(t.Rows, append([]string{name}, values[name]...))
	}
	return t
}

// flatten calls add for each field of struct v that is set, by its JSON
// name (a duration's without "_ns", printed as a duration), prefixed.
func flatten(prefix string, v reflect.Value, add func(name, value string)) {
	if v.Kind() != reflect.Struct {
		add(strings.TrimSuffix(prefix, "."), fmt.Sprint(v.Interface()))
		return
	}
	ty := v.Type()
	for i := range ty.NumField() {
		f, fv := ty.Field(i), v.Field(i)
		if !f.IsExported() || fv.IsZero() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "" || name == "-" {
			name = f.Name
		}
		switch {
		case fv.Type() == reflect.TypeFor[time.Duration]():
			add(prefix+strings.TrimSuffix(name, "_ns"), report.Duration(time.Duration(fv.Int())))
		case fv.Kind() == reflect.Pointer:
			flatten(prefix+name+".", fv.Elem(), add)
		case fv.Kind() == reflect.Struct:
			flatten(prefix+name+".", fv, add)
		case fv.Kind() == reflect.Slice:
			parts := make([]string, fv.Len())
			for j := range parts {
				parts[j] = cell(fv.Index(j))
			}
			add(prefix+name, strings.Join(parts, ", "))
		default:
			add(prefix+name, cell(fv))
		}
	}
}

// cell is a configuration value as text: numbers in full (1000000, not
// 1e+06).
func cell(v reflect.Value) string {
	if v.Kind() == reflect.Float64 || v.Kind() == reflect.Float32 {
		return strconv.FormatFloat(v.Float(), 'f', -1, 64)
	}
	return fmt.Sprint(v.Interface())
}
