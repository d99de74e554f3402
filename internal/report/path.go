package report

import (
	"fmt"
	"strings"

	"github.com/volley-net/volley/internal/result"
)

// The path lines: what the probes' and replies' IP headers said on the
// way (see result.Path).

// writePath writes the path lines of p, if any: one per direction, then
// the changes during the run, each with its time and probe.
func writePath(b *strings.Builder, p *result.Path) {
	if p == nil {
		return
	}
	b.WriteString("path up: ")
	if p.Up.Packets == 0 {
		fmt.Fprintf(b, "not known: %s\n", p.UpNote)
	} else {
		b.WriteString(pathUp(p.Sent, p.Up))
		b.WriteString(pathTail(p.Up))
	}
	b.WriteString("path down: ")
	if p.Down.Packets == 0 {
		fmt.Fprintf(b, "not known: %s\n", p.DownNote)
	} else {
		b.WriteString(pathDown(p.Down))
		b.WriteString(pathTail(p.Down))
	}
	for _, e := range p.Events {
		fmt.Fprintf(b, "path event at %s, probe %d, %s: %s\n", Duration(e.At), e.Seq, e.Direction, markChange(e.From, e.To))
	}
	if p.EventsNotKept > 0 {
		fmt.Fprintf(b, "path events: %d more not kept (the first %d are)\n", p.EventsNotKept, result.MaxPathEvents)
	}
}

// pathUp says what became of the marks sent, as the reflector saw them
// first: DSCP kept or remarked, ECN kept, bleached or rewritten, and the
// hops.
func pathUp(sent result.PathMark, d result.PathDirection) string {
	f := d.First
	var parts []string
	if f.DSCP == sent.DSCP {
		parts = append(parts, fmt.Sprintf("DSCP %s kept", dscpName(sent.DSCP)))
	} else {
		parts = append(parts, fmt.Sprintf("DSCP %s → %s (remarked)", dscpName(sent.DSCP), dscpName(f.DSCP)))
	}
	ecn := f.ECN
	if ecn == result.CE && sent.ECN != result.NotECT {
		ecn = sent.ECN // a CE mark, counted below, is not a rewrite
	}
	if ecn == sent.ECN {
		parts = append(parts, fmt.Sprintf("ECN %s kept", ECNName(sent.ECN)))
	} else {
		parts = append(parts, fmt.Sprintf("ECN %s → %s (%s)", ECNName(sent.ECN), ECNName(ecn), ecnChange(sent.ECN, ecn)))
	}
	parts = append(parts, fmt.Sprintf("TTL %d → %d (%s)", d.InitialTTL, f.TTL, hops(d.Hops)))
	return strings.Join(parts, ", ")
}

// pathDown says what the replies' headers said first: their sender's
// marks are not known, so neither is a remarking, and the hops are from
// an inferred initial TTL.
func pathDown(d result.PathDirection) string {
	f := d.First
	ttl := fmt.Sprintf("TTL %d (%s from an initial %d)", f.TTL, hops(d.Hops), d.InitialTTL)
	if d.InitialInferred {
		ttl = fmt.Sprintf("TTL %d (%s from an initial %d, inferred)", f.TTL, hops(d.Hops), d.InitialTTL)
	}
	return fmt.Sprintf("DSCP %s, ECN %s, %s", dscpName(f.DSCP), ECNName(f.ECN), ttl)
}

// pathTail ends a direction's line: its CE marks and its changes.
func pathTail(d result.PathDirection) string {
	var s string
	if d.CE > 0 {
		s += fmt.Sprintf("; CE marked on %d of %d (%.3g%%)", d.CE, d.Packets, 100*float64(d.CE)/float64(d.Packets))
	}
	switch d.Changes {
	case 0:
		s += "; no change during the run"
	case 1:
		s += "; 1 change during the run"
	default:
		s += fmt.Sprintf("; %d changes during the run", d.Changes)
	}
	return s + "\n"
}

// markChange says what changed between two marks of a direction.
func markChange(from, to result.PathMark) string {
	var parts []string
	if from.DSCP != to.DSCP {
		parts = append(parts, fmt.Sprintf("DSCP %s → %s (remarked)", dscpName(from.DSCP), dscpName(to.DSCP)))
	}
	if from.ECN != to.ECN {
		parts = append(parts, fmt.Sprintf("ECN %s → %s (%s)", ECNName(from.ECN), ECNName(to.ECN), ecnChange(from.ECN, to.ECN)))
	}
	if from.TTL != to.TTL {
		parts = append(parts, fmt.Sprintf("TTL %d → %d (%+d %s)", from.TTL, to.TTL, from.TTL-to.TTL, hopNoun(from.TTL-to.TTL)))
	}
	return strings.Join(parts, ", ")
}

// ecnChange names an ECN rewrite: bleached (ECT to not-ECT), or
// rewritten.
func ecnChange(from, to int) string {
	if from != result.NotECT && to == result.NotECT {
		return "bleached"
	}
	return "rewritten"
}

// ecnNames are the ECN code points' names (RFC 3168).
var ecnNames = [4]string{"not-ECT", "ECT(1)", "ECT(0)", "CE"}

// ECNName names the ECN code point in the low two bits of e, as the
// report does ("ECT(0)").
func ECNName(e int) string { return ecnNames[e&3] }

// dscpNames names the DSCPs of RFC 4594's classes (and RFC 8622's LE).
var dscpNames = map[int]string{
	0: "CS0", 8: "CS1", 16: "CS2", 24: "CS3", 32: "CS4", 40: "CS5", 48: "CS6", 56: "CS7",
	10: "AF11", 12: "AF12", 14: "AF13", 18: "AF21", 20: "AF22", 22: "AF23",
	26: "AF31", 28: "AF32", 30: "AF33", 34: "AF41", 36: "AF42", 38: "AF43",
	44: "VA", 46: "EF", 1: "LE",
}

// dscpName is a DSCP with its name, where it has one: "46 (EF)".
func dscpName(d int) string {
	if n, ok := dscpNames[d]; ok {
		return fmt.Sprintf("%d (%s)", d, n)
	}
	return fmt.Sprint(d)
}

// hops says a hop count: "1 hop", "2 hops".
func hops(n int) string { return fmt.Sprintf("%d %s", n, hopNoun(n)) }

// hopNoun is "hop" for n of 1 or -1, "hops" otherwise.
func hopNoun(n int) string {
	if n == 1 || n == -1 {
		return "hop"
	}
	return "hops"
}
