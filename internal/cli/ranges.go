package cli

import (
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/volley-net/volley/internal/units"
)

// The ranges of the duration flags whose values outside them would be
// taken and then fail in a way that blames something else (the client's
// own are client.MinTimeout and the rest, checked with its Config).
const (
	// minReportInterval is the shortest interval report (-i), client's
	// and server's. Interval lines print their bounds to 10ms (0.01s), so
	// a shorter one prints lines such as 0.00-0.00s; and 100 lines a
	// second is already more than a terminal shows or a reader follows.
	// The counters behind a line cost nothing per probe, so 10ms (finer
	// than iperf's 0.1s or 0.5s) is for scripts reading jsonl.
	minReportInterval = 10 * time.Millisecond
)

// checkReportInterval checks -i: 0 (none), or minReportInterval or more.
func checkReportInterval(d time.Duration) error {
	if d != 0 && d < minReportInterval {
		return usagef("--report-interval %s: want at least %s, or 0 for none", units.FormatDuration(d), units.FormatDuration(minReportInterval))
	}
	return nil
}

// optionalValueArgs catches a value given to a flag whose value is
// optional (NoOptDefVal) without the "=": "--reconnect 2m" reads 2m as an
// argument and leaves --reconnect at its default. When the flag was given
// and holds that default and an argument looks like its value, the error
// says the value needs the "=".
func optionalValueArgs(cmd *cobra.Command, args []string, name string, isValue func(string) bool) error {
	fl := cmd.Flags().Lookup(name)
	if fl == nil || !fl.Changed || fl.Value.String() != fl.NoOptDefVal {
		return nil
	}
	for _, a := range args {
		if isValue(a) {
			return usagef("--%s %s: a value needs the =, as in --%s=%s (--%s alone means %s, and %s was read as an argument)",
				name, a, name, a, name, fl.NoOptDefVal, a)
		}
	}
	return nil
}

// isList reports whether s is a comma-separated list of words from words.
func isList(s string, words ...string) bool {
	for _, w := range strings.Split(s, ",") {
		if !slices.Contains(words, w) {
			return false
		}
	}
	return true
}

// The server's.
const (
	// minIdleTimeout: a session idle for less than a second is forgotten
	// between the probes of a slow client, which then reads "session
	// unknown".
	minIdleTimeout = time.Second
	// minMaxDuration: a session must live long enough to measure.
	minMaxDuration = time.Second
	// minStreamTimeout bounds --send-timeout and --handshake-timeout
	// from below: shorter, a healthy peer's connection is closed.
	minStreamTimeout = 100 * time.Millisecond
)
