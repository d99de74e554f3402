// Package report renders result.Result as text, JSON and JSON lines, and
// a reflector's counters as the server's lines. It does no network I/O,
// and keeps no state between calls but a JSONStream's, which writes one
// document over a run, and a ReflectorIntervals', which knows the lines
// it wrote.
package report

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/volley-net/volley/internal/result"
)

// WriteJSON writes res as one indented JSON document. Its intervals are
// an array, empty where res has none, as a JSONStream writes them.
func WriteJSON(w io.Writer, res *result.Result) error {
	if res.Intervals == nil {
		r := *res
		r.Intervals = []result.Interval{}
		res = &r
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(res)
}

// WriteJSONLInterval writes one interval as a JSON line with "type":
// "interval".
func WriteJSONLInterval(w io.Writer, iv result.Interval) error {
	return json.NewEncoder(w).Encode(struct {
		Type string `json:"type"`
		result.Interval
	}{"interval", iv})
}

// WriteJSONLTarget writes one interval of a monitored target as a JSON
// line with "type": "interval", the target's name and its labels (volley
// monitor --format jsonl).
func WriteJSONLTarget(w io.Writer, target string, labels map[string]string, iv result.Interval) error {
	return json.NewEncoder(w).Encode(struct {
		Type   string            `json:"type"`
		Target string            `json:"target"`
		Labels map[string]string `json:"labels,omitempty"`
		result.Interval
	}{"interval", target, labels, iv})
}

// WriteJSONLTargetResult writes a monitored target's whole result as a
// JSON line with "type": "result", its name and its labels, without the
// intervals (volley monitor --once --format jsonl).
func WriteJSONLTargetResult(w io.Writer, target string, labels map[string]string, res *result.Result) error {
	r := *res
	r.Intervals = nil
	return json.NewEncoder(w).Encode(struct {
		Type   string            `json:"type"`
		Target string            `json:"target"`
		Labels map[string]string `json:"labels,omitempty"`
		*result.Result
	}{"result", target, labels, &r})
}

// WriteJSONLTargetError writes, for a monitored target that could not be
// measured, a JSON line with "type": "error", its name, its labels and
// why (volley monitor --once --format jsonl).
func WriteJSONLTargetError(w io.Writer, target string, labels map[string]string, why string) error {
	return json.NewEncoder(w).Encode(struct {
		Type   string            `json:"type"`
		Target string            `json:"target"`
		Labels map[string]string `json:"labels,omitempty"`
		Error  string            `json:"error"`
	}{"error", target, labels, why})
}

// WriteJSONLResult writes the final JSON line: the whole result with
// "type": "result" and without the intervals, which came before it.
func WriteJSONLResult(w io.Writer, res *result.Result) error {
	r := *res
	r.Intervals = nil
	return json.NewEncoder(w).Encode(struct {
		Type string `json:"type"`
		*result.Result
	}{"result", &r})
}

// WriteJSONL writes res as JSON lines: each interval, then the result.
func WriteJSONL(w io.Writer, res *result.Result) error {
	for _, iv := range res.Intervals {
		if err := WriteJSONLInterval(w, iv); err != nil {
			return err
		}
	}
	return WriteJSONLResult(w, res)
}

// WriteTextHeader writes the line that opens a text report.
func WriteTextHeader(w io.Writer, c result.Config) error {
	return WriteTextHeaderMix(w, c, nil)
}

// WriteTextHeaderMix writes the lines that open the text report of a run
// whose probes are drawn from the workload mix (entries as configured;
// their counts are not read): the header says so in place of one probe
// size, and a line per entry follows it.
func WriteTextHeaderMix(w io.Writer, c result.Config, mix []result.WorkloadEntry) error {
	if c.Transport == "" {
		return writeRebuiltHeader(w, c)
	}
	length := "for " + Duration(c.Duration)
	switch {
	case c.Count > 0 && c.Duration > 0:
		length = fmt.Sprintf("for %d probes or %s", c.Count, Duration(c.Duration))
	case c.Count > 0:
		length = fmt.Sprintf("for %d probes", c.Count)
	}
	warm := ""
	switch {
	case c.WarmupCount > 0:
		warm = fmt.Sprintf(" after %d warm-up probes", c.WarmupCount)
	case c.WarmupDuration > 0:
		warm = " after " + Duration(c.WarmupDuration) + " of warm-up"
	}
	shape := fmt.Sprintf("window %d", c.Window)
	switch {
	case c.RateMax:
		shape = "open loop as fast as it can send (--rate max)"
	case c.Rate > 0:
		shape = fmt.Sprintf("open loop at %s probes/s", SI(c.Rate))
	case c.SendInterval > 0:
		shape = "open loop every " + Duration(c.SendInterval)
	case c.Burst > 0:
		shape = fmt.Sprintf("bursts of %d every %s, window %d", c.Burst, Duration(c.Period), c.Window)
	}
	if c.Poisson {
		shape += fmt.Sprintf(" (Poisson gaps, seed %d)", c.Seed)
	}
	if c.Parallel > 1 {
		shape += fmt.Sprintf(", %d flows", c.Parallel)
	}
	if c.Threshold > 0 {
		length += ", stopping at an RTT above " + Duration(c.Threshold)
		if c.ThresholdSkip > 0 {
			length += fmt.Sprintf(" after the first %d probes", c.ThresholdSkip)
		}
	}
	sizes := fmt.Sprintf("%d-byte probes", c.Size)
	if c.Granted.ReplySize > 0 {
		sizes += fmt.Sprintf(" and %d-byte replies", c.Granted.ReplySize)
	}
	if c.Granted.Hold > 0 {
		sizes += ", held " + Duration(c.Granted.Hold)
	}
	switch {
	case len(mix) == 1:
		sizes = fmt.Sprintf("one probe shape (--workload, seed %d)", c.Seed)
	case len(mix) > 1:
		sizes = fmt.Sprintf("a mix of %d probe shapes drawn by weight (--workload, seed %d)", len(mix), c.Seed)
	}
	peer := ""
	if p := c.Peer; p != nil {
		peer = " (" + PeerName(p) + ")"
		if p.Protocol == "connect" {
			sizes = "TCP handshakes"
		}
	}
	if _, err := fmt.Fprintf(w, "volley %s%s from %s: %s, %s, timeout %s, %s%s\n",
		runName(c), peer, c.LocalAddr, sizes, shape, Duration(c.Timeout), length, warm); err != nil {
		return err
	}
	if err := writeMix(w, mix); err != nil {
		return err
	}
	if err := writeSocket(w, c); err != nil {
		return err
	}
	return writeGrantNotes(w, c)
}

// writeRebuiltHeader opens the report of a result rebuilt from a probe
// log (volley report), which knows no transport, addresses or load: what
// it was rebuilt from, and how.
func writeRebuiltHeader(w io.Writer, c result.Config) error {
	flows := "1 flow"
	if c.Parallel != 1 {
		flows = fmt.Sprintf("%d flows", c.Parallel)
	}
	ivs := ", no intervals"
	if c.ReportInterval > 0 {
		ivs = ", in intervals of " + Duration(c.ReportInterval) + " by send time"
	}
	_, err := fmt.Fprintf(w, "volley probe log %s: %s over %s, rebuilt from its lines%s\n", c.Target, flows, Duration(c.Duration), ivs)
	return err
}

// runName names what a run measured: its transport and reflector (a
// foreign peer's protocol and address), or for a result rebuilt from a
// probe log (no transport), the log.
func runName(c result.Config) string {
	switch {
	case c.Transport == "":
		return c.Target
	case c.Peer != nil:
		return c.Peer.Protocol + "://" + c.RemoteAddr
	}
	return c.Transport + "://" + c.RemoteAddr
}

// writeSocket writes the socket options granted, when any were asked
// for, and TCP's connection.
func writeSocket(w io.Writer, c result.Config) error {
	if so := c.Socket; so != nil && len(so.Asked) > 0 {
		var b strings.Builder
		fmt.Fprintf(&b, "socket buffers %s/%s bytes (send/receive, as granted), tos %#x, ttl %d", SI(float64(so.SendBuffer)), SI(float64(so.RecvBuffer)), so.TOS, so.TTL)
		if so.DF {
			b.WriteString(", don't fragment")
		}
		if so.Congestion != "" {
			fmt.Fprintf(&b, ", congestion %s", so.Congestion)
		}
		if c.Transport == "tcp" {
			fmt.Fprintf(&b, ", nodelay %t", so.NoDelay)
		}
		if so.Interface != "" {
			fmt.Fprintf(&b, ", bound to %s", so.Interface)
		}
		if _, err := fmt.Fprintln(w, b.String()); err != nil {
			return err
		}
	}
	if t := c.TCP; t != nil {
		if _, err := fmt.Fprintf(w, "tcp connect %s (icwnd %d, mss %d, irtt %s)\n", Duration(t.ConnectTime), t.Cwnd, t.MSS, Duration(t.RTT)); err != nil {
			return err
		}
	}
	return nil
}

// writeMix writes a line per workload entry: its share of the probes and
// its shape.
func writeMix(w io.Writer, mix []result.WorkloadEntry) error {
	var sum float64
	for _, e := range mix {
		sum += e.Weight
	}
	var b strings.Builder
	for _, e := range mix {
		fmt.Fprintf(&b, "  %s: weight %g (%.3g%%), %d-byte probes", e.Name, e.Weight, 100*e.Weight/sum, e.Size)
		if e.ReplySize > 0 {
			fmt.Fprintf(&b, ", %d-byte replies", e.ReplySize)
		} else {
			b.WriteString(", replies as large")
		}
		if e.Hold > 0 {
			b.WriteString(", held " + Duration(e.Hold))
		}
		if e.Gap > 0 {
			b.WriteString(", then a gap of " + Duration(e.Gap))
		}
		b.WriteString("\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// tcpText renders an interval's TCP_INFO, or nothing.
func tcpText(t *result.TCPInterval) string {
	if t == nil {
		return ""
	}
	return fmt.Sprintf("retrans %d, cwnd %d, tcp rtt %s/%s", t.Retransmits, t.Cwnd, Duration(t.RTT), Duration(t.RTTVar))
}

// flowRate is the probes/s c asked of each flow: --rate, or one per
// --send-interval.
func flowRate(c result.Config) float64 {
	if c.SendInterval > 0 {
		return 1e9 / float64(c.SendInterval)
	}
	return c.Rate
}

// writeGrantNotes says where the reflector granted less than was asked.
func writeGrantNotes(w io.Writer, c result.Config) error {
	var notes []string
	if c.ReplySize > 0 && c.Granted.ReplySize != c.ReplySize {
		notes = append(notes, fmt.Sprintf("reply size %d bytes (asked %d)", c.Granted.ReplySize, c.ReplySize))
	}
	if c.Hold != c.Granted.Hold {
		notes = append(notes, fmt.Sprintf("hold %s (asked %s)", Duration(c.Granted.Hold), Duration(c.Hold)))
	}
	if asked := flowRate(c); c.Granted.MaxRate > 0 && asked > c.Granted.MaxRate {
		notes = append(notes, fmt.Sprintf("at most %s probes/s (asked %s): probes above it are dropped", SI(c.Granted.MaxRate), SI(asked)))
	}
	if len(notes) == 0 {
		return nil
	}
	_, err := fmt.Fprintf(w, "the reflector granted less than asked: %s\n", strings.Join(notes, ", "))
	return err
}

// intervalColumns heads the interval lines; oneWayColumns those of a
// one-way run, whose client knows what it sent, and when.
const (
	intervalColumns = "%-13s %8s %8s %13s %11s %13s %4s  %8s %8s %8s %8s %8s  %8s %8s %8s %8s %9s\n"
	oneWayColumns   = "%-13s %8s %9s %9s  %12s %8s\n"
)

// WriteIntervalHeader writes the column heads of the interval lines of a
// run of configuration c.
func WriteIntervalHeader(w io.Writer, c result.Config) error {
	if c.OneWay {
		_, err := fmt.Fprintf(w, oneWayColumns, "interval", "sent", "probes/s", "bit/s", "send err p50", "max")
		return err
	}
	lost, dup, reord := "lost(up/dn)", "dup(up/dn)", "reord(up/dn)"
	if undivided(c) {
		lost, dup, reord = "lost", "dup", "reord"
	}
	_, err := fmt.Fprintf(w, intervalColumns, "interval", "sent", "recv", lost, dup, reord, "late",
		"rtt min", "mean", "p50", "p99", "max", "resp", "up", "down", "ipdv", "probes/s")
	return err
}

// WriteInterval writes one interval line of a run of configuration c: the
// probes sent in the interval, and what became of them. Latency columns
// are means except where the head says otherwise; p50 and p99 show "-"
// when they are not among the percentiles asked for. A one-way run's line
// has what was sent, and the send error.
func WriteInterval(w io.Writer, c result.Config, iv result.Interval) error {
	span := Seconds(iv.Start) + "-" + Seconds(iv.End) + "s"
	n := iv.Counts
	if c.OneWay {
		var se result.Latency
		if iv.SendError != nil {
			se = *iv.SendError
		}
		_, err := fmt.Fprintf(w, oneWayColumns, span, fmt.Sprint(n.Sent), SI(iv.Throughput.ProbesPerSecUp),
			SI(iv.Throughput.BitsPerSecUp), latP(se, 50), latMax(se))
		return err
	}
	_, err := fmt.Fprintf(w, intervalColumns, span,
		fmt.Sprint(n.Sent), fmt.Sprint(n.Received), countsSplit(c, n.Lost, n.LostUp, n.LostDown),
		countsSplit(c, n.Duplicates, n.DuplicatesUp, n.DuplicatesDown),
		countsSplit(c, n.Reordered, n.ReorderedUp, n.ReorderedDown), fmt.Sprint(n.Late),
		latMin(iv.RTT), latMean(iv.RTT), latP(iv.RTT, 50), latP(iv.RTT, 99), latMax(iv.RTT),
		latMean(iv.Response), latMean(iv.Up), latMean(iv.Down), latMean(iv.IPDV.RTT),
		SI(iv.Throughput.ProbesPerSecDown))
	if err == nil && n.InFlight > 0 {
		// Reported before all its probes were accounted for: the run
		// keeps only so many intervals waiting.
		_, err = fmt.Fprintf(w, "%-14s %d of these probes still in flight when printed (neither answered nor timed out): their fate counts in the summary only\n", "", n.InFlight)
	}
	if err == nil && iv.TCP != nil {
		_, err = fmt.Fprintf(w, "%-14s %s\n", "", tcpText(iv.TCP))
	}
	if err == nil && n.Reconnects > 0 {
		// The interval holds a gap: a session was lost and a new one
		// took over (the summary says when).
		_, err = fmt.Fprintf(w, "%-14s reconnected: new session after a lost one\n", "")
	}
	return err
}

func latMin(l result.Latency) string {
	if l.Count == 0 {
		return "-"
	}
	return Duration(l.Min)
}

func latMax(l result.Latency) string {
	if l.Count == 0 {
		return "-"
	}
	return Duration(l.Max)
}

func latMean(l result.Latency) string {
	if l.Count == 0 {
		return "-"
	}
	return Duration(l.Mean)
}

func latP(l result.Latency, p float64) string {
	if v, ok := l.Percentile(p); ok && l.Count > 0 {
		return Duration(v)
	}
	return "-"
}

// stopReasons words result.Result.Stopped for the summary line.
var stopReasons = map[string]string{
	"duration":            "duration reached",
	"count":               "count reached",
	"interrupted":         "interrupted",
	"threshold":           "RTT threshold crossed",
	"reflector-silent":    "reflector silent",
	"reflector-gone":      "reflector gone",
	"reflector-restarted": "the reflector restarted or forgot the session",
	"reflector-ended":     "the reflector ended the session",
	"reflector-stalled":   "the reflector stopped reading",
	"reflector-broken":    "the reflector's stream could not be read on",
	"error":               "an error",
}

// InFlight words the count of probes in flight lost with a session.
func InFlight(n uint64) string {
	if n == 1 {
		return "1 probe in flight lost"
	}
	return fmt.Sprintf("%d probes in flight lost", n)
}

// ReconnectReason words result.Reconnect.Reason.
func ReconnectReason(reason string) string {
	switch reason {
	case "restarted":
		return "the reflector restarted or forgot the session"
	case "silent":
		return "the reflector went silent"
	case "gone":
		return "the reflector went away (its port unreachable, or its connection closed)"
	}
	return reason
}

// WriteHistogram writes h as text: a line per bin with its count, share
// and a bar.
func WriteHistogram(w io.Writer, h *result.Histogram) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%s histogram, %d values\n", h.Of, h.Total)
	line := func(label string, bin result.Bin) {
		l := fmt.Sprintf("%19s %10d %7.3f%% %s", label, bin.Count, 100*bin.Share, bar(bin.Share, 40))
		b.WriteString(strings.TrimRight(l, " ") + "\n")
	}
	line("< "+Duration(h.Underflow.High), h.Underflow)
	for _, bin := range h.Bins {
		line(Duration(bin.Low)+" - "+Duration(bin.High), bin)
	}
	line(">= "+Duration(h.Overflow.Low), h.Overflow)
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteText writes the whole text report: header, interval lines, summary
// and histogram.
func WriteText(w io.Writer, res *result.Result) error {
	if err := WriteTextHeader(w, res.Config); err != nil {
		return err
	}
	if len(res.Intervals) > 0 {
		if err := WriteIntervalHeader(w, res.Config); err != nil {
			return err
		}
		for _, iv := range res.Intervals {
			if err := WriteInterval(w, res.Config, iv); err != nil {
				return err
			}
		}
	}
	if err := WriteSummary(w, res); err != nil {
		return err
	}
	if res.Histogram != nil {
		return WriteHistogram(w, res.Histogram)
	}
	return nil
}
