package chart

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/volley-net/volley/internal/report"
	"github.com/volley-net/volley/internal/result"
)

// phasesTable holds a row per phase of each latency-under-load run: its
// time, the bulk streams' goodput each way, the RTT and each direction's
// p50 and p99 (the one-way delays as the figures draw them), the loss
// each way, the delay the load added, where the queue built and the
// responsiveness score. It has no rows when no run has a Load.
func phasesTable(runs []Run) table {
	t := table{Head: header(runs, "phase", "start (s)", "end (s)", "streams", "goodput up (bit/s)", "goodput down (bit/s)",
		"RTT p50", "RTT p99", "up p50", "up p99", "down p50", "down p99", "lost up", "lost down",
		"added RTT p50", "added RTT p99", "added up p50", "added up p99", "added down p50", "added down p99", "queue", "RPM")}
	for i, r := range runs {
		l := r.Result.Load
		if l == nil {
			continue
		}
		for j, ph := range l.Phases {
			iv := ph.Probes
			cells := []string{ph.Name, report.Seconds(iv.Start), report.Seconds(iv.End), strconv.Itoa(ph.Streams),
				report.SI(ph.BitsPerSecUp), report.SI(ph.BitsPerSecDown)}
			for _, k := range []string{kindRTT, kindUp, kindDown} {
				d := latencyOf(r.Result, iv, k)
				cells = append(cells, at(d, 50), at(d, 99))
			}
			cells = append(cells, lossShare(iv.Counts.LostUp, iv.Counts.Sent), lossShare(iv.Counts.LostDown, iv.Counts.Sent))
			var added result.Added
			if ph.Added != nil {
				added = *ph.Added
			}
			for _, ps := range [][]result.Percentile{added.RTT, added.Up, added.Down} {
				cells = append(cells, at(result.Latency{Percentiles: ps}, 50), at(result.Latency{Percentiles: ps}, 99))
			}
			cells = append(cells, added.Queue, rpmOf(l, j))
			t.Rows = append(t.Rows, withRun(runs, i, cells...))
		}
	}
	return t
}

// lossShare is lost of sent as a count and a share: "3 (0.300%)".
func lossShare(lost, sent uint64) string {
	if sent == 0 {
		return strconv.FormatUint(lost, 10)
	}
	return fmt.Sprintf("%d (%.3f%%)", lost, 100*float64(lost)/float64(sent))
}

// rpmOf is the responsiveness score of l's phase j: the loaded phase's
// RPM, the first idle phase's idle RPM; "" for the others, or when l has
// no score.
func rpmOf(l *result.Load, j int) string {
	s := l.Responsiveness
	switch {
	case s == nil:
		return ""
	case l.Phases[j].Loaded:
		return strconv.FormatFloat(s.RPM, 'f', 0, 64)
	case j == 0:
		return strconv.FormatFloat(s.IdleRPM, 'f', 0, 64)
	}
	return ""
}

// loadLines say, for each latency-under-load run, its load, its
// responsiveness score and the delays it came from, where the queue
// built, and what went wrong with the bulk streams.
func loadLines(runs []Run) []string {
	var out []string
	for i, r := range runs {
		l := r.Result.Load
		if l == nil {
			continue
		}
		lead := ""
		if len(runs) > 1 {
			lead = label(runs, i) + ": "
		}
		out = append(out, lead+"load: "+loadPhrase(l))
		if s := l.Responsiveness; s != nil {
			line := fmt.Sprintf("%sresponsiveness: %.0f RPM (%s), idle %.0f RPM; trimmed mean RTT %s of %d round trips",
				lead, s.RPM, s.Draft, s.IdleRPM, report.Duration(s.TrimmedMean), s.Samples)
			if s.TrimmedUp != 0 || s.TrimmedDown != 0 {
				line += fmt.Sprintf(" (up %s, down %s)", report.Duration(s.TrimmedUp), report.Duration(s.TrimmedDown))
			}
			if s.Queue != "" {
				line += "; queue built: " + s.Queue
			}
			out = append(out, line)
		} else {
			out = append(out, lead+"responsiveness: no score (no replies in the loaded phase)")
		}
		if len(l.Errors) > 0 {
			out = append(out, lead+"bulk streams: "+strings.Join(l.Errors, "; "))
		}
	}
	return out
}
