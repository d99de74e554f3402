package report

import (
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/volley-net/volley/internal/result"
)

// notKept is the share of its schedule's slots, in percent, an open-loop
// run may miss (skip after falling behind) before the report says the
// schedule was not kept. Slots, not the mean rate: a Poisson schedule's
// random gaps move the rate by several percent in a short run. An
// interrupted run is judged alike: its slots end where it stopped.
const notKept = 1.0

// WriteSummary writes the summary block of a text report.
func WriteSummary(w io.Writer, res *result.Result) error {
	var b strings.Builder
	writeSummaryCounts(&b, res)
	writeSummaryRates(&b, res)
	writeLatencyTable(&b, res)
	oneWay := res.Config.OneWay
	if !noOneWay(res.Config) {
		b.WriteString(delayNote(res.ClockOffset, oneWay))
	}
	writePeer(&b, res)
	writeStamps(&b, res)
	if c := res.ClockOffset; c != nil {
		writeClock(&b, c, oneWay)
	}
	writePath(&b, res.Path)
	writeWorkload(&b, res.Workload)
	writeFlows(&b, res)
	writeLoad(&b, res.Load)
	// res.Error is not repeated here: the command line says it once, on
	// stderr.
	_, err := io.WriteString(w, b.String())
	return err
}

// writeSummaryCounts writes the summary's first lines: what ended the
// run, the probes' counts, and how exact the loss per direction is.
func writeSummaryCounts(b *strings.Builder, res *result.Result) {
	s := res.Summary
	c := s.Counts
	fmt.Fprintf(b, "--- %s summary: %s measured", runName(res.Config), Duration(s.End-s.Start))
	if why, ok := stopReasons[res.Stopped]; ok {
		fmt.Fprintf(b, ", ended: %s", why)
	}
	b.WriteString(" ---\n")
	oneWay := res.Config.OneWay
	switch {
	case oneWay:
		fmt.Fprintf(b, "probes   sent %d, received %d, lost %d (%.3f%%), duplicates %d, reordered %d, errors %d\n",
			c.Sent, c.Received, c.Lost, c.LossPercent, c.Duplicates, c.Reordered, c.Errors)
	case undivided(res.Config):
		fmt.Fprintf(b, "probes   sent %d, received %d, lost %d (%.3f%%: direction unknown), duplicates %d, reordered %d, late %d, errors %d\n",
			c.Sent, c.Received, c.Lost, c.LossPercent, c.Duplicates, c.Reordered, c.Late, c.Errors)
	default:
		fmt.Fprintf(b, "probes   sent %d, received %d, lost %d (%.3f%%: %d up, %d down), duplicates %d (%d up, %d down), reordered %d (%d up, %d down), late %d, errors %d\n",
			c.Sent, c.Received, c.Lost, c.LossPercent, c.LostUp, c.LostDown, c.Duplicates, c.DuplicatesUp, c.DuplicatesDown,
			c.Reordered, c.ReorderedUp, c.ReorderedDown, c.Late, c.Errors)
	}
	switch {
	case res.Config.Peer != nil:
		b.WriteString(peerCountNote(res.Config.Peer, res.PeerResults))
	case oneWay:
		b.WriteString("         one-way: the reflector counted what arrived and measured the up delays; nothing came back down\n")
	case res.ReflectorCount == "close":
		b.WriteString("         loss per direction is exact: from the reflector's final count\n")
	case res.ReflectorCount == "partial":
		b.WriteString("         loss per direction is exact for the last session (the reflector's final count), estimated for the lost ones\n")
	case res.ReflectorCount == "":
		// A result rebuilt from a probe log (volley report).
		b.WriteString("         loss per direction is not known: a probe log does not say which way a probe was lost\n")
	default:
		b.WriteString("         loss per direction is estimated: the reflector's final count was not received\n")
	}
}

// writeSummaryRates writes the rates, the open loop's schedule, the
// gaps a lost session left, TCP's counters and the threshold crossed.
func writeSummaryRates(b *strings.Builder, res *result.Result) {
	s := res.Summary
	oneWay := res.Config.OneWay
	t := s.Throughput
	switch {
	case res.Config.Transport == "":
		// Rebuilt from a probe log, which has no sizes: no bit rates.
		fmt.Fprintf(b, "rate     %s probes/s up, %s down; %s requests/s completed\n", SI(t.ProbesPerSecUp), SI(t.ProbesPerSecDown), SI(t.RequestsPerSec))
	case oneWay:
		fmt.Fprintf(b, "rate     %s probes/s up; %sbit/s up\n", SI(t.ProbesPerSecUp), SI(t.BitsPerSecUp))
	case res.Config.Peer != nil && res.Config.Peer.Protocol == "connect":
		// A handshake carries no bytes of the probe's.
		fmt.Fprintf(b, "rate     %s handshakes/s started, %s completed\n", SI(t.ProbesPerSecUp), SI(t.ProbesPerSecDown))
	default:
		fmt.Fprintf(b, "rate     %s probes/s up, %s down; %sbit/s up, %sbit/s down; %s requests/s completed\n",
			SI(t.ProbesPerSecUp), SI(t.ProbesPerSecDown), SI(t.BitsPerSecUp), SI(t.BitsPerSecDown), SI(t.RequestsPerSec))
	}
	writeSchedule(b, res)
	if cpu := res.CPU; cpu != nil {
		fmt.Fprintf(b, "cpu      the client's process kept %.2f of %d CPUs busy while it sent (user %.2fs, system %.2fs over %.2fs)\n",
			cpu.Used(), cpu.CPUs, cpu.User, cpu.System, cpu.Seconds)
	}
	for _, rc := range res.Reconnects {
		fmt.Fprintf(b, "gap      at %ss the session was lost (%s), %s; ", Seconds(rc.At), ReconnectReason(rc.Reason), InFlight(rc.InFlight))
		if rc.Resumed {
			fmt.Fprintf(b, "a new session carried on after %s\n", Duration(rc.Gap))
		} else {
			b.WriteString("no new session opened\n")
		}
	}
	if s.TCP != nil {
		fmt.Fprintf(b, "tcp      %s (retransmits since the connection opened; window and RTT at the end)\n", tcpText(s.TCP))
	}
	if h := res.Threshold; h != nil {
		fmt.Fprintf(b, "threshold probe %d took %s, above %s, %ss into the run\n", h.Seq, Duration(h.RTT), Duration(res.Config.Threshold), Seconds(h.At))
	}
}

// writeLatencyTable writes the table of latencies: a row per
// measure, a column per statistic and percentile.
func writeLatencyTable(b *strings.Builder, res *result.Result) {
	s := res.Summary
	oneWay := res.Config.OneWay
	pcts := res.Config.Percentiles
	heads := []string{"", "min", "mean", "stdev"}
	for _, p := range pcts {
		heads = append(heads, Percent(p))
	}
	heads = append(heads, "max")
	row := func(cells []string) {
		fmt.Fprintf(b, "%-10s", cells[0])
		for _, cell := range cells[1:] {
			fmt.Fprintf(b, " %8s", cell)
		}
		b.WriteString("\n")
	}
	row(heads)
	type named struct {
		name string
		lat  result.Latency
	}
	var rows []named
	if oneWay {
		// What the reflector measured: nothing comes back.
		rows = []named{{"up", s.Up}, {"ipdv up", s.IPDV.Up}}
	} else {
		rows = []named{{"rtt", s.RTT}}
		if s.RTTFromSchedule != nil {
			rows = append(rows, named{"rtt sched", *s.RTTFromSchedule})
		}
		if noOneWay(res.Config) {
			// The peer's answers carry no times of its own.
			rows = append(rows, named{"ipdv rtt", s.IPDV.RTT})
		} else {
			rows = append(rows, named{"response", s.Response}, named{"up", s.Up}, named{"down", s.Down},
				named{"ipdv rtt", s.IPDV.RTT}, named{"ipdv up", s.IPDV.Up}, named{"ipdv down", s.IPDV.Down})
		}
	}
	if k := s.Kernel; k != nil {
		// Only the rows the stamps gave: without the reflector's, the
		// client's own (rtt and the stacks).
		for _, l := range []named{{"rtt kern", k.RTT}, {"resp kern", k.Response}, {"up kern", k.Up},
			{"down kern", k.Down}, {"send stack", k.SendStack}, {"send queue", k.LocalQueue}, {"recv stack", k.RecvStack}} {
			if l.lat.Count > 0 {
				rows = append(rows, l)
			}
		}
	}
	for _, l := range rows {
		cells := []string{l.name, latMin(l.lat), latMean(l.lat), "-"}
		if l.lat.Count > 0 {
			cells[3] = Duration(l.lat.Stdev)
		}
		for _, p := range pcts {
			cells = append(cells, latP(l.lat, p))
		}
		row(append(cells, latMax(l.lat)))
	}
	if !oneWay && s.RTTFromSchedule != nil {
		b.WriteString("(rtt sched is measured from each probe's scheduled send time: what a stalled sender would hide)\n")
	}
}

// writeStamps says where the times came from, at each end.
func writeStamps(b *strings.Builder, res *result.Result) {
	s := res.Summary
	if t := res.Timestamps; t != nil {
		refl := t.Reflector
		if refl == "" {
			refl = "none sent"
		}
		fmt.Fprintf(b, "stamps   client %s, reflector %s", t.Client, refl)
		if t.Asked != "" {
			fmt.Fprintf(b, " (--timestamps %s)", t.Asked)
		}
		if s.Kernel != nil {
			b.WriteString("; the kern rows are from the kernel's stamps, send stack is T1k-T1 and recv stack T4-T4k: what the stacks and volley add to rtt")
			if s.Kernel.LocalQueue.Count > 0 {
				b.WriteString("; send queue is the part of send stack spent in this host's queueing discipline (qdisc)")
			}
		}
		b.WriteString("\n")
		if s.Kernel != nil && s.Kernel.Up.Count > 0 && (t.Client == "hardware" || t.Reflector == "hardware") {
			// The clock identity is the kernel's: NICs keep clocks of
			// their own.
			b.WriteString("note: up kern and down kern compare the NICs' clocks at each end, raw: the clock line does not cover them\n")
		}
		for _, n := range t.Notes {
			fmt.Fprintf(b, "note: %s\n", n)
		}
	}
}

// writeWorkload writes the table of the workload's entries, if any.
func writeWorkload(b *strings.Builder, workload []result.WorkloadEntry) {
	if len(workload) > 0 {
		fmt.Fprintf(b, "%-16s %7s %6s %6s %8s %8s %8s %8s %8s %8s %8s\n", "workload entry", "weight", "size", "reply",
			"sent", "recv", "lost", "rtt p50", "p99", "max", "resp")
		for _, e := range workload {
			reply := "="
			if e.ReplySize > 0 {
				reply = fmt.Sprint(e.ReplySize)
			}
			fmt.Fprintf(b, "%-16s %7.3g %6d %6s %8d %8d %8d %8s %8s %8s %8s\n", e.Name, e.Weight, e.Size, reply,
				e.Sent, e.Received, e.Lost, latP(e.RTT, 50), latP(e.RTT, 99), latMax(e.RTT), latMean(e.Response))
		}
	}
}

// writeFlows writes a line per flow of a run of several.
func writeFlows(b *strings.Builder, res *result.Result) {
	oneWay := res.Config.OneWay
	for i, f := range res.Flows {
		fc := f.Summary.Counts
		if oneWay {
			fmt.Fprintf(b, "flow %d from %s: sent %d, received %d, lost %d; up min %s p50 %s max %s",
				i+1, f.LocalAddr, fc.Sent, fc.Received, fc.Lost,
				latMin(f.Summary.Up), latP(f.Summary.Up, 50), latMax(f.Summary.Up))
		} else {
			lost := fmt.Sprintf("%d (%d up, %d down)", fc.Lost, fc.LostUp, fc.LostDown)
			if undivided(res.Config) {
				lost = fmt.Sprint(fc.Lost)
			}
			fmt.Fprintf(b, "flow %d from %s: sent %d, received %d, lost %s; rtt min %s p50 %s max %s",
				i+1, f.LocalAddr, fc.Sent, fc.Received, lost,
				latMin(f.Summary.RTT), latP(f.Summary.RTT, 50), latMax(f.Summary.RTT))
		}
		if f.Error != "" {
			fmt.Fprintf(b, "; %s", f.Error)
		}
		b.WriteString("\n")
	}
}

// delayNote says what the summary's up and down rows (one-way runs: up
// only) are, as the clock offset c (nil: not known) makes them.
func delayNote(c *result.ClockOffset, oneWay bool) string {
	switch {
	case oneWay && c != nil && c.Method == "same-clock":
		return "(up is measured, T2-T1: the reflector reads the client's clock)\n"
	case oneWay:
		return "(up is the raw clock difference T2-T1: it includes the reflector's clock offset, unknown here)\n"
	case c != nil && c.Method == "same-clock":
		return "(up and down are measured, T2-T1 and T4-T3: the reflector reads the client's clock)\n"
	case c != nil:
		return "(up and down are raw clock differences T2-T1 and T4-T3: they include the reflector's clock offset, which is only estimated, see clock)\n"
	}
	return "(up and down are raw clock differences T2-T1 and T4-T3: they include the reflector's clock offset, unknown here)\n"
}

// writeClock writes the clock offset's lines: what was measured, or what
// was estimated and on which assumption.
func writeClock(b *strings.Builder, c *result.ClockOffset, oneWay bool) {
	if c.Method == "same-clock" {
		rows := "up and down are"
		if oneWay {
			rows = "up is"
		}
		fmt.Fprintf(b, "clock    the reflector reads the client's clock (same host and boot): offset 0 within %s, no drift; %s measured\n", Duration(c.Bound), rows)
		return
	}
	sign := "+"
	if c.Offset < 0 {
		sign = "-"
	}
	fmt.Fprintf(b, "clock    reflector %s%s ± %s from the client, an estimate that assumes %s; the bound holds whatever the asymmetry, barring clock steps\n",
		sign, Duration(c.Offset.Abs()), Duration(c.Bound), c.Assumes)
	if d := c.Drift; d != nil {
		fmt.Fprintf(b, "         drift %+.1f ± %.1f ppm (95%%, over %s)\n", d.PPM, d.ErrorPPM, Duration(d.Span))
	} else {
		b.WriteString("         drift not estimated: the run was too short, or had too few replies, to tell\n")
	}
	if c.EstimatedUp != nil && c.EstimatedDown != nil {
		fmt.Fprintf(b, "         estimated up p50 %s, down p50 %s: the raw delays corrected by the estimate, each within ±%s of the truth\n",
			latP(*c.EstimatedUp, 50), latP(*c.EstimatedDown, 50), Duration(c.Bound))
	}
	for _, w := range c.Warnings {
		fmt.Fprintf(b, "warning: %s\n", w)
	}
}

// writeSchedule writes how an open-loop run kept its schedule.
func writeSchedule(b *strings.Builder, res *result.Result) {
	s := res.Summary
	c, t, se := s.Counts, s.Throughput, s.SendError
	switch {
	case se == nil:
	case res.Config.RateMax:
		fmt.Fprintf(b, "schedule none (--rate max): sent %s probes/s, %s replies/s came back\n", SI(t.ProbesPerSecUp), SI(t.ProbesPerSecDown))
	case res.Config.Rate == 0 && res.Config.SendInterval == 0:
		// Rebuilt from a probe log: the schedule's rate is not known.
		fmt.Fprintf(b, "schedule sent %s probes/s; send error p50 %s, p99 %s, max %s\n", SI(t.ProbesPerSecUp), latP(*se, 50), latP(*se, 99), latMax(*se))
	default:
		perFlow := flowRate(res.Config)
		rate, gaps, flows := flowsRate(res, perFlow)
		asked := perFlow * float64(flows) // the rate is per flow
		short := 100 * (rate - asked) / asked
		achieved := fmt.Sprintf("%s (%+.2f%%)", SI(rate), short)
		if gaps < minGaps {
			// One probe more or less is a large share of a few: --rate
			// 0.01 -t 1s was said to achieve +9900%.
			achieved = fmt.Sprintf("%s (over %.1f of its gaps: too short a run to compare)", SI(rate), gaps)
		}
		fmt.Fprintf(b, "schedule asked %s probes/s, achieved %s; send error p50 %s, p99 %s, max %s; %d slots skipped after stalls\n",
			SI(asked), achieved, latP(*se, 50), latP(*se, 99), latMax(*se), c.Skipped)
		if slots := c.Sent + c.Skipped; slots > 0 && 100*float64(c.Skipped)/float64(slots) > notKept {
			share := fmt.Sprintf("; achieved %+.2f%% of the rate asked", short)
			if gaps < minGaps {
				share = ""
			}
			fmt.Fprintf(b, "schedule NOT KEPT: the run missed %d of its %d slots (%.2f%%%s); the figures are those of the rate achieved\n",
				c.Skipped, slots, 100*float64(c.Skipped)/float64(slots), share)
		}
	}
}

// flowsRate is the rate a run's schedule achieved, the fewest of its gaps
// (perFlow a second) a flow's span held, and how many flows measured: each
// flow's rate over its own span, added up. The total's span runs from the
// first flow's start to the last one's end, and flows start a millisecond
// or so apart: over it, "-P 2 -n 5 --rate 100k" was said to achieve -97%
// (an outside test). A flow that measured nothing (it failed before its
// first slot) is left out, rather than make the others' short.
func flowsRate(res *result.Result, perFlow float64) (rate, gaps float64, flows int) {
	s := res.Summary
	gaps = math.Inf(1)
	for _, f := range res.Flows {
		if span := (f.Summary.End - f.Summary.Start).Seconds(); span > 0 {
			rate += f.Summary.Throughput.ProbesPerSecUp
			gaps = min(gaps, span*perFlow)
			flows++
		}
	}
	if flows == 0 {
		return s.Throughput.ProbesPerSecUp, (s.End - s.Start).Seconds() * perFlow, max(res.Config.Parallel, 1)
	}
	return rate, gaps, flows
}

// minGaps is the fewest of its schedule's gaps a run must span for the
// summary to compare the rate it achieved with the rate asked.
const minGaps = 10
