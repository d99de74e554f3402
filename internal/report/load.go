package report

import (
	"fmt"
	"strings"

	"github.com/volley-net/volley/internal/result"
)

// writeLoad writes a latency-under-load run's block: each phase's goodput,
// delays and loss, what the load added, and the responsiveness score.
func writeLoad(b *strings.Builder, l *result.Load) {
	if l == nil {
		return
	}
	fmt.Fprintf(b, "--- latency under load: %d bulk stream(s) %s, phases of %s ---\n", l.Streams, loadWords[l.Direction], Duration(l.Phase))
	fmt.Fprintf(b, "%-11s %12s %12s %9s %9s %9s %9s %9s %9s %9s %11s\n", "phase", "goodput up", "down",
		"rtt p50", "p90", "p99", "up p50", "up p99", "down p50", "down p99", "lost up/dn")
	for _, p := range l.Phases {
		v := p.Probes
		fmt.Fprintf(b, "%-11s %12s %12s %9s %9s %9s %9s %9s %9s %9s %11s\n", p.Name,
			SI(p.BitsPerSecUp)+"bit/s", SI(p.BitsPerSecDown)+"bit/s",
			latP(v.RTT, 50), latP(v.RTT, 90), latP(v.RTT, 99), latP(v.Up, 50), latP(v.Up, 99),
			latP(v.Down, 50), latP(v.Down, 99), fmt.Sprintf("%d/%d", v.Counts.LostUp, v.Counts.LostDown))
	}
	for _, p := range l.Phases {
		if p.Loaded && p.Added != nil {
			fmt.Fprintf(b, "added by load (loaded less idle): rtt %s", addedText(p.Added.RTT))
			if len(p.Added.Up) > 0 {
				fmt.Fprintf(b, "; up %s; down %s", addedText(p.Added.Up), addedText(p.Added.Down))
			}
			b.WriteString("\n")
		}
	}
	if r := l.Responsiveness; r != nil {
		fmt.Fprintf(b, "responsiveness %s RPM under load, %s RPM idle (%s: 60 s over the trimmed mean RTT, %s, of %d round trips)\n",
			rpmText(r.RPM), rpmText(r.IdleRPM), r.Draft, Duration(r.TrimmedMean), r.Samples)
		if r.Queue != "" {
			fmt.Fprintf(b, "queue    %s%s\n", queueWords[r.Queue], rttGrowth(l, r.Queue))
		}
	}
	for _, e := range l.Errors {
		fmt.Fprintf(b, "load     %s\n", e)
	}
}

var loadWords = map[string]string{"down": "downloading", "up": "uploading", "both": "each way"}

var queueWords = map[string]string{
	"up":   "built on the way up: the up delay grew, the down delay not or by under a quarter as much",
	"down": "built on the way down: the down delay grew, the up delay not or by under a quarter as much",
	"both": "built both ways: the up and the down delays grew",
	"none": "none seen on the path: neither direction's median delay grew by a millisecond (or a tenth of the idle RTT)",
}

// addedText writes p50 and p99 of added delays, signed.
func addedText(ps []result.Percentile) string {
	var parts []string
	for _, p := range ps {
		if p.P == 50 || p.P == 99 {
			sign := "+"
			if p.Value < 0 {
				sign = ""
			}
			parts = append(parts, fmt.Sprintf("p%g %s%s", p.P, sign, Duration(p.Value)))
		}
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, ", ")
}

// rpmText writes a score with no decimals: 1234, or 1.2M past a million.
func rpmText(v float64) string {
	if v >= 1e6 {
		return SI(v)
	}
	return fmt.Sprintf("%.0f", v)
}

// rttGrowth says, when no direction's queue grew, by how much the round
// trip's median did anyway: what the hosts (the reflector's response, the
// stacks) added under load.
func rttGrowth(l *result.Load, queue string) string {
	if queue != "none" {
		return ""
	}
	for _, p := range l.Phases {
		if !p.Loaded || p.Added == nil {
			continue
		}
		for _, a := range p.Added.RTT {
			if a.P == 50 && a.Value > 0 {
				return fmt.Sprintf("; the round trip's grew by %s, in the hosts (the reflector's response, the stacks)", Duration(a.Value))
			}
		}
	}
	return ""
}
