package saved

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/volley-net/volley/internal/chart"
	"github.com/volley-net/volley/internal/result"
)

// readJSON reads a document or a stream from br, whose first byte is '{'.
// A first line that is a whole JSON value with a "type" starts a stream;
// anything else is a document (indented over many lines, or on one, of
// any length).
func readJSON(ctx context.Context, cr *capReader, br *bufio.Reader, name string, opt Options) (*File, error) {
	base := cr.off - int64(br.Buffered())
	line, err := br.ReadBytes('\n')
	var tl *tooLongError
	switch {
	case errors.As(err, &tl):
		// One long line: a document's.
	case err != nil && !errors.Is(err, io.EOF):
		return nil, lineError(name, 1, err)
	default:
		if t := bytes.TrimSpace(line); json.Valid(t) {
			var v struct {
				Type *string `json:"type"`
			}
			if json.Unmarshal(t, &v) == nil && v.Type != nil {
				return readLines(ctx, br, line, name, opt)
			}
		}
	}
	// The newlines read but not yet decoded: in the first line, and
	// buffered after it.
	buffered, _ := br.Peek(br.Buffered())
	var nl []int64
	for i, c := range line {
		if c == '\n' {
			nl = append(nl, base+int64(i))
		}
	}
	for i, c := range buffered {
		if c == '\n' {
			nl = append(nl, cr.off-int64(len(buffered))+int64(i))
		}
	}
	kept := make([]byte, 0, len(line)+len(buffered)) // not line's: it is read from
	cr.document(nl, append(append(kept, line...), buffered...))
	f, err := readDocument(ctx, cr, io.MultiReader(bytes.NewReader(line), br), base, name)
	if err != nil {
		return nil, err
	}
	if f.Result.Config.Transport == "" {
		return nil, &Error{Name: name, Field: "config.transport", Err: fmt.Errorf("%w: a document without its transport", ErrNotVolley)}
	}
	if err := selectPercentiles(f.Result, opt.Percentiles); err != nil {
		return nil, &Error{Name: name, Err: err}
	}
	return f, nil
}

// runOf is the Run of a result read whole.
func runOf(res *result.Result) chart.Run { return chart.Run{Result: res} }

// jsonError turns a decoding error of data, which starts at line line0+1
// of the file, into an Error at the line it names.
func jsonError(name string, data []byte, line0 int, err error) error {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	e := &Error{Name: name, Err: err}
	lineAt := func(off int64) int {
		off = min(max(off, 0), int64(len(data)))
		return line0 + 1 + bytes.Count(data[:off], []byte("\n"))
	}
	switch {
	case errors.As(err, &syn):
		e.Line = lineAt(syn.Offset)
		if syn.Offset >= int64(len(bytes.TrimRight(data, " \t\r\n"))) {
			e.Err = fmt.Errorf("%w: the JSON ends before it closes (cut short, or an interrupted run?)", ErrNotVolley)
		} else {
			e.Err = fmt.Errorf("%w: %v", ErrNotVolley, syn)
		}
	case errors.As(err, &typ):
		e.Line = lineAt(typ.Offset)
		e.Field = typ.Field
		e.Err = fmt.Errorf("%w: a JSON %s where volley writes %s", ErrNotVolley, typ.Value, typ.Type)
	default:
		e.Err = fmt.Errorf("%w: %v", ErrNotVolley, err)
	}
	return e
}

// readLines reads a stream: interval lines, then one result line. first
// is its first line, already read. Each line is checked as it is read,
// and the intervals thinned as they come.
func readLines(ctx context.Context, br *bufio.Reader, first []byte, name string, opt Options) (*File, error) {
	thin := NewThinner(MaxIntervals)
	var ck checker
	var res *result.Result
	line := first
	n := 0
	for {
		n++
		if err := ctx.Err(); err != nil {
			return nil, &Error{Name: name, Line: n, Err: err}
		}
		if t := bytes.TrimSpace(line); len(t) > 0 {
			if res != nil {
				return nil, &Error{Name: name, Line: n, Err: errors.New("more after the result line, which ends a stream")}
			}
			r, err := readLine(t, name, n, thin, &ck)
			if err != nil {
				return nil, err
			}
			res = r
		}
		var err error
		line, err = br.ReadBytes('\n')
		if errors.Is(err, io.EOF) && len(line) == 0 {
			break
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, lineError(name, n+1, err)
		}
	}
	if res == nil {
		f, err := truncated(thin.Intervals(), name, n)
		f.Notes = append(f.Notes, notes(thin, ck)...)
		return f, err
	}
	if res.Config.Transport == "" {
		return nil, &Error{Name: name, Field: "config.transport", Err: fmt.Errorf("%w: a result line without its transport", ErrNotVolley)}
	}
	res.Intervals = thin.Intervals()
	if err := selectPercentiles(res, opt.Percentiles); err != nil {
		return nil, &Error{Name: name, Err: err}
	}
	return &File{Run: runOf(res), Kind: JSONL, Notes: notes(thin, ck)}, nil
}

// readLine reads line n of a stream, t: an interval, added to thin, or
// the result, returned.
func readLine(t []byte, name string, n int, thin *Thinner, ck *checker) (*result.Result, error) {
	var v struct {
		Type string `json:"type"`
	}
	if err := json.Unmarshal(t, &v); err != nil {
		return nil, jsonError(name, t, n-1, err)
	}
	switch v.Type {
	case "interval":
		var iv result.Interval
		if err := json.Unmarshal(t, &iv); err != nil {
			return nil, jsonError(name, t, n-1, err)
		}
		if fe := ck.check(&iv, ""); fe != nil {
			return nil, &Error{Name: name, Line: n, Field: fe.field, Err: fe.err}
		}
		thin.Add(iv)
		return nil, nil
	case "result":
		res := new(result.Result)
		if err := json.Unmarshal(t, res); err != nil {
			return nil, jsonError(name, t, n-1, err)
		}
		if err := checkVersion(res); err != nil {
			return nil, &Error{Name: name, Line: n, Err: err}
		}
		if fe := ck.check(res, ""); fe != nil {
			return nil, &Error{Name: name, Line: n, Field: fe.field, Err: fe.err}
		}
		return res, nil
	}
	return nil, &Error{Name: name, Line: n, Field: "type", Err: fmt.Errorf("%w: %q is not a line volley writes (interval or result)", ErrNotVolley, v.Type)}
}

// truncated returns what a stream cut short holds: its intervals, and
// their counts summed as the summary's, with ErrTruncated.
func truncated(ivs []result.Interval, name string, lines int) (*File, error) {
	res := &result.Result{SchemaVersion: result.SchemaVersion, Tool: "volley", Intervals: ivs}
	for _, iv := range ivs {
		res.Summary.Counts.Add(iv.Counts)
		res.Summary.End = max(res.Summary.End, iv.End)
	}
	if c := &res.Summary.Counts; c.Sent > 0 {
		c.LossPercent = 100 * float64(c.Lost) / float64(c.Sent)
	}
	if len(ivs) > 0 {
		res.Config.Percentiles = percentilesOf(ivs[0].RTT)
	}
	f := &File{Run: runOf(res), Kind: JSONL, Truncated: true,
		Notes: []string{fmt.Sprintf("%d intervals of a stream cut short: no result line, so no configuration and no summary beyond the counts", len(ivs))}}
	return f, &Error{Name: name, Line: lines, Err: ErrTruncated}
}

func percentilesOf(l result.Latency) []float64 {
	out := make([]float64, 0, len(l.Percentiles))
	for _, p := range l.Percentiles {
		out = append(out, p.P)
	}
	return out
}

// selectPercentiles makes every latency of res carry pcts (nil: leave them
// as saved): from its saved percentiles, or for the summary's RTT, up and
// down from the distribution. The summary's main delay (RTT; up for a
// one-way run) must have them all; other rows leave out those they lack.
func selectPercentiles(res *result.Result, pcts []float64) error {
	if pcts == nil {
		return nil
	}
	var d result.Distribution
	if res.Distribution != nil {
		d = *res.Distribution
	}
	s := &res.Summary
	mainName, main, ladder := "rtt", &s.RTT, d.RTT
	if res.Config.OneWay {
		mainName, main, ladder = "up", &s.Up, d.Up
	}
	if missing := pick(main, pcts, ladder); len(missing) > 0 && main.Count > 0 {
		return fmt.Errorf("--percentiles %s: the saved %s has no %s (it has %s, and a distribution of %s)", joinP(pcts), mainName,
			joinP(missing), joinP(percentilesOf(*main)), joinP(percentilesOf(result.Latency{Percentiles: ladder})))
	}
	pick(&s.Up, pcts, d.Up)
	pick(&s.Down, pcts, d.Down)
	for _, l := range latencies(s) {
		pick(l, pcts, nil)
	}
	for i := range res.Intervals {
		for _, l := range latencies(&res.Intervals[i]) {
			pick(l, pcts, nil)
		}
	}
	for i := range res.Flows {
		for _, l := range latencies(&res.Flows[i].Summary) {
			pick(l, pcts, nil)
		}
	}
	for i := range res.Workload {
		pick(&res.Workload[i].RTT, pcts, nil)
		pick(&res.Workload[i].Response, pcts, nil)
	}
	if c := res.ClockOffset; c != nil {
		pick(c.EstimatedUp, pcts, nil)
		pick(c.EstimatedDown, pcts, nil)
	}
	if l := res.Load; l != nil {
		for i := range l.Phases {
			for _, lat := range latencies(&l.Phases[i].Probes) {
				pick(lat, pcts, nil)
			}
		}
	}
	res.Config.Percentiles = slices.Clone(pcts)
	return nil
}

// latencies lists the latencies of iv.
func latencies(iv *result.Interval) []*result.Latency {
	ls := []*result.Latency{&iv.RTT, &iv.Response, &iv.Up, &iv.Down, &iv.IPDV.RTT, &iv.IPDV.Up, &iv.IPDV.Down,
		iv.RTTFromSchedule, iv.SendError}
	if k := iv.Kernel; k != nil {
		ls = append(ls, &k.RTT, &k.Response, &k.Up, &k.Down, &k.SendStack, &k.RecvStack, &k.LocalQueue)
	}
	return ls
}

// pick sets l's percentiles to pcts, each from l's own or from extra, and
// returns those found in neither (left out). A latency of no values keeps
// none.
func pick(l *result.Latency, pcts []float64, extra []result.Percentile) (missing []float64) {
	if l == nil {
		return nil
	}
	if l.Count == 0 {
		l.Percentiles = []result.Percentile{}
		return nil
	}
	out := make([]result.Percentile, 0, len(pcts))
	for _, p := range pcts {
		switch v, ok := find(l.Percentiles, p); {
		case ok:
			out = append(out, result.Percentile{P: p, Value: v})
		case p <= 0:
			out = append(out, result.Percentile{P: p, Value: l.Min})
		case p >= 100:
			out = append(out, result.Percentile{P: p, Value: l.Max})
		default:
			if v, ok := find(extra, p); ok {
				out = append(out, result.Percentile{P: p, Value: v})
			} else {
				missing = append(missing, p)
			}
		}
	}
	l.Percentiles = out
	return missing
}

// find returns the value at percentile p of ps.
func find(ps []result.Percentile, p float64) (time.Duration, bool) {
	for _, q := range ps {
		if q.P == p {
			return q.Value, true
		}
	}
	return 0, false
}

func joinP(ps []float64) string {
	s := make([]string, len(ps))
	for i, p := range ps {
		s[i] = "p" + strconv.FormatFloat(p, 'f', -1, 64)
	}
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}
