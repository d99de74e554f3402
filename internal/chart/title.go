package chart

import (
	"fmt"
	"strings"

	"github.com/volley-net/volley/internal/report"
	"github.com/volley-net/volley/internal/result"
)

// titleLines is the title block of a picture: what the figures show, so
// that a picture is never separated from it. One run: its date, version,
// addresses, transport, sizes and load on three lines; several: a
// heading, then a line each, led by its label (drawn wrapped at its
// " · " when too long for the picture).
func titleLines(runs []Run) []string {
	if len(runs) == 1 {
		res := runs[0].Result
		head := "volley " + version(res) + " · " + date(res)
		if runs[0].Label != "" {
			head = runs[0].Label + " · " + head
		}
		return []string{head, addresses(res.Config), sizes(res.Config) + " · " + load(res)}
	}
	lines := make([]string, len(runs)+1)
	lines[0] = fmt.Sprintf("volley: %d runs compared", len(runs))
	for i, r := range runs {
		lines[i+1] = fmt.Sprintf("%s: %s · %s · %s · %s · volley %s", label(runs, i), date(r.Result),
			addresses(r.Result.Config), sizes(r.Result.Config), load(r.Result), version(r.Result))
	}
	return lines
}

// date is when the run started, to the second, in the zone it was
// recorded in.
func date(res *result.Result) string {
	if res.Start.IsZero() {
		return "start unknown"
	}
	return res.Start.Format("2006-01-02 15:04:05 MST")
}

// version is the volley version that made the result.
func version(res *result.Result) string {
	if res.Version == "" {
		return "(version unknown)"
	}
	return res.Version
}

// addresses names the transport and both ends: "udp 127.0.0.1:40000 →
// 127.0.0.1:2112 (target localhost)".
func addresses(c result.Config) string {
	if rebuilt(c) {
		return "rebuilt from the probe log " + c.Target
	}
	s := c.Transport
	local, remote := c.LocalAddr, c.RemoteAddr
	if local == "" {
		local = "?"
	}
	if remote == "" {
		remote = "?"
	}
	s += " " + local + " → " + remote
	if c.Target != "" && c.Target != c.RemoteAddr {
		s += " (target " + c.Target + ")"
	}
	if c.InProcess {
		s += ", in-process reflector"
	}
	return strings.TrimSpace(s)
}

// sizes is the probes' and replies' sizes.
func sizes(c result.Config) string {
	if rebuilt(c) {
		return "sizes not in a probe log"
	}
	s := fmt.Sprintf("%d-byte probes", c.Size)
	switch {
	case c.OneWay:
		return s + ", no replies"
	case c.Granted.ReplySize > 0:
		return s + fmt.Sprintf(", %d-byte replies", c.Granted.ReplySize)
	case c.ReplySize > 0:
		return s + fmt.Sprintf(", %d-byte replies", c.ReplySize)
	}
	return s + fmt.Sprintf(", %d-byte replies", c.Size)
}

// load is the run's load shape: its loop and window or rate, one-way,
// workload, flows and the bulk load of a latency-under-load run.
func load(res *result.Result) string {
	c := res.Config
	if rebuilt(c) {
		if c.Parallel > 1 {
			return fmt.Sprintf("load not in a probe log, %d flows", c.Parallel)
		}
		return "load not in a probe log"
	}
	s := fmt.Sprintf("closed loop, window %d", c.Window)
	switch {
	case c.RateMax:
		s = "open loop, as fast as it could send"
	case c.Rate > 0:
		s = "open loop, " + report.SI(c.Rate) + " pps"
	case c.SendInterval > 0:
		s = "open loop, one every " + report.Duration(c.SendInterval)
	case c.Burst > 0:
		s = fmt.Sprintf("bursts of %d every %s, window %d", c.Burst, report.Duration(c.Period), c.Window)
	}
	if c.Poisson {
		s += " (Poisson)"
	}
	if c.OneWay {
		s = "one-way, " + s
	}
	if n := len(res.Workload); n > 0 {
		s += fmt.Sprintf(", workload of %d shapes", n)
	}
	if c.Parallel > 1 {
		s += fmt.Sprintf(", -P %d flows", c.Parallel)
	}
	if l := res.Load; l != nil {
		s += ", under load: " + loadPhrase(l)
	}
	return s
}

// rebuilt reports whether c is the configuration of a result that volley
// report rebuilt from a probe log, which holds no transport, addresses,
// sizes or load.
func rebuilt(c result.Config) bool { return c.Transport == "" }
