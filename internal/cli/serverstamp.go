package cli

import (
	"fmt"
	"net"
	"strings"

	"github.com/spf13/cobra"

	"github.com/volley-net/volley/internal/reflector"
	"github.com/volley-net/volley/internal/report"
	"github.com/volley-net/volley/internal/server"
	"github.com/volley-net/volley/internal/stamp"
)

// stampServerFlags are the server's STAMP listener's flags.
type stampServerFlags struct {
	addr      string
	keyFile   string
	stateless bool
}

func (s *stampServerFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVar(&s.addr, "stamp", "", fmt.Sprintf("also answer STAMP (RFC 8762) Session-Sender packets on this UDP [ADDR:]PORT (%d is STAMP's; 0 picks a free one), within --allow, --max-rate, --max-total-rate, --max-sessions and --max-sessions-per-source", stamp.Port))
	fl.StringVar(&s.keyFile, "stamp-key-file", "", "STAMP's authenticated mode: the HMAC key from this file (as --key-file's); packets without its HMAC are dropped")
	fl.BoolVar(&s.stateless, "stamp-stateless", false, "STAMP: copy each sender's sequence number into its reply instead of numbering each session's replies (stateful, the default, tells a sender which way its packets were lost)")
}

// config checks the STAMP flags, fills sc, and returns the address to
// listen on ("" without --stamp).
func (s *stampServerFlags) config(cmd *cobra.Command, sc *server.STAMPConfig) (string, error) {
	if s.addr == "" {
		for _, name := range []string{"stamp-key-file", "stamp-stateless"} {
			if cmd.Flags().Changed(name) {
				return "", usagef("--%s: no STAMP listener to apply it to (--stamp [ADDR:]PORT)", name)
			}
		}
		return "", nil
	}
	addr, err := stampAddr(s.addr)
	if err != nil {
		return "", err
	}
	sc.Stateless = s.stateless
	if s.keyFile != "" {
		if sc.Key, err = readKeyFile("--stamp-key-file", s.keyFile); err != nil {
			return "", err
		}
	}
	return addr, nil
}

// stampAddr reads --stamp: a port alone listens on every address, as
// --listen :PORT does.
func stampAddr(a string) (string, error) {
	const want = "want [ADDR:]PORT, the port 0 to 65535 (0 picks a free one)"
	addr := a
	if !strings.Contains(a, ":") {
		addr = ":" + a
	}
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", usagef("--stamp %s: %s", a, want)
	}
	if _, err := net.LookupPort("udp", port); err != nil || port == "" {
		return "", usagef("--stamp %s: bad port %q; %s", a, port, want)
	}
	return addr, nil
}

// stampLine is the STAMP listener's line of counters c: what came, what
// was answered, and what was dropped, by reason.
func stampLine(c reflector.Counters) string {
	var b strings.Builder
	fmt.Fprintf(&b, "in %d, answered %d, dropped %d", c.PacketsIn, c.PacketsOut, c.Dropped())
	var reasons []string
	for r, n := range c.Drops {
		if n > 0 {
			reasons = append(reasons, fmt.Sprintf("%s %d", reflector.DropReason(r), n))
		}
	}
	if len(reasons) > 0 {
		fmt.Fprintf(&b, " (%s)", strings.Join(reasons, ", "))
	}
	if c.SendErrors > 0 {
		fmt.Fprintf(&b, ", send errors %d", c.SendErrors)
	}
	fmt.Fprintf(&b, ", sessions %d", c.Sessions)
	return b.String()
}

// stampInterval writes the STAMP listener's interval line, when anything
// came in it.
func (o *serverOut) stampInterval(c *reflector.Counters) {
	if c == nil || (c.PacketsIn == 0 && c.SendErrors == 0) {
		return
	}
	fmt.Fprintf(o.w, "stamp: %s\n", stampLine(*c))
}

// stampTotals writes the STAMP listener's totals.
func (o *serverOut) stampTotals(c reflector.Counters) {
	o.mu.Lock()
	defer o.mu.Unlock()
	fmt.Fprintf(o.w, "--- stamp totals over %s: %s, sessions opened %d\n", report.Duration(c.Elapsed), stampLine(c), c.SessionsOpened)
}
