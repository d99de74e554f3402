package cli

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// flagGroup is a heading of --help and the flags under it, in order.
type flagGroup struct {
	title string
	flags []string
}

// clientFlagGroups are the client's --help headings.
var clientFlagGroups = []flagGroup{
	{"Measurement", []string{"duration", "count", "warmup", "timeout", "threshold", "oneway", "reconnect", "key", "key-file", "stamp-stateful", "stamp-ssid"}},
	{"Load shape", []string{"size", "reply-size", "hold", "workload", "window", "parallel", "rate", "send-interval", "poisson", "seed", "burst", "period", "load", "phase"}},
	{"Socket", []string{"bind", "interface", "ipv4", "ipv6", "buffer", "tos", "dscp", "ecn", "ttl", "df", "nodelay", "quickack", "congestion"}},
	{"Timestamp", []string{"timestamps"}},
	{"Output", []string{"report-interval", "percentiles", "format", "histogram", "quiet", "no-progress", "log", "plot"}},
	{"Scheduling", []string{"cpu", "realtime", "nice", "mlock", "busy-poll"}},
}

// setGroupedUsage makes cmd's usage (the end of its --help) list its
// flags under groups' headings, and any flag in none of them (--help)
// under "Other flags".
func setGroupedUsage(cmd *cobra.Command, groups []flagGroup) {
	cmd.SetUsageFunc(func(c *cobra.Command) error {
		var b strings.Builder
		fmt.Fprintf(&b, "Usage:\n  %s\n", c.UseLine())
		placed := map[string]bool{}
		section := func(title string, fs *pflag.FlagSet) {
			if fs.HasAvailableFlags() {
				fmt.Fprintf(&b, "\n%s flags:\n%s", title, fs.FlagUsages())
			}
		}
		for _, g := range groups {
			fs := pflag.NewFlagSet(g.title, pflag.ContinueOnError)
			fs.SortFlags = false
			for _, name := range g.flags {
				if f := c.LocalFlags().Lookup(name); f != nil {
					fs.AddFlag(f)
					placed[name] = true
				}
			}
			section(g.title, fs)
		}
		rest := pflag.NewFlagSet("other", pflag.ContinueOnError)
		rest.SortFlags = false
		c.LocalFlags().VisitAll(func(f *pflag.Flag) {
			if !placed[f.Name] {
				rest.AddFlag(f)
			}
		})
		section("Other", rest)
		section("Global", c.InheritedFlags())
		_, err := fmt.Fprint(c.OutOrStderr(), b.String())
		return err
	})
}
