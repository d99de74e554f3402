// Package cli is volley's command line: the client, server and version
// subcommands, their flags, and the exit codes. Only cmd/volley imports it.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// Exit codes.
const (
	ExitOK    = 0
	ExitError = 1
	ExitUsage = 2
	// ExitInterrupted: a signal ended volley before it was done (128 +
	// SIGINT, as a shell reports a process that SIGINT ended).
	ExitInterrupted = 130
)

// usageError marks an error the user made on the command line.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

func usagef(format string, args ...any) error {
	return usageError{fmt.Errorf(format, args...)}
}

// exitError carries an exit code for an error already reported in full.
type exitError struct {
	code int
	err  error
}

func (e exitError) Error() string { return e.err.Error() }
func (e exitError) Unwrap() error { return e.err }

// Version is the version volley reports; the module version when built
// from a tagged module, "dev" otherwise.
func Version() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "dev"
}

// Main runs volley with args (without the program name) and returns the
// exit code. Reports go to stdout, errors to stderr as one line each.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	root := &cobra.Command{
		Use:   "volley",
		Short: "Measure latency, jitter, loss and throughput by bouncing probes off a reflector",
		Long: `volley measures round-trip time, one-way delay, jitter, loss and throughput
between a client and a reflector.

  volley client              measure against an in-process reflector on loopback
  volley server              run a reflector on UDP :7766
  volley client HOST[:PORT]  measure against it
  volley report FILE...      write saved results again, or compare runs`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Args:          cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return cmd.Help()
		},
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetArgs(args)
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error {
		return usageError{fmt.Errorf("%w (see %s --help)", flagValueError(err), cmd.CommandPath())}
	})
	root.AddCommand(newClientCmd(stdout, stderr), newServerCmd(stdout), newMonitorCmd(stdout, stderr), newAgentCmd(stdout, stderr), newTimestampsCmd(stdout), newReportCmd(stdout, stderr), &cobra.Command{
		Use:   "version",
		Short: "Print volley's version",
		Args:  cobra.NoArgs,
		Run: func(cmd *cobra.Command, args []string) {
			fmt.Fprintf(stdout, "volley %s\n", Version())
		},
	})
	ran := false
	for _, c := range root.Commands() {
		if c.RunE != nil {
			runE := c.RunE
			c.RunE = func(cmd *cobra.Command, args []string) error {
				ran = true
				return runE(cmd, args)
			}
		}
	}
	err := root.ExecuteContext(ctx)
	if err == nil {
		return ExitOK
	}
	code := ExitError
	var ue usageError
	var ee exitError
	switch {
	case errors.As(err, &ee):
		code = ee.code
	case errors.As(err, &ue), !ran:
		// Errors from cobra itself (unknown command, bad arguments) are
		// usage errors too.
		code = ExitUsage
	}
	fmt.Fprintf(stderr, "volley: %s\n", oneLine(err.Error()))
	return code
}

// ReloadsOnHangup reports whether the command args run (without the
// program name) reads its files again on SIGHUP instead of ending:
// volley monitor and volley agent, which run as daemons (not volley
// monitor --once, which ends as a client run does).
func ReloadsOnHangup(args []string) bool {
	for i, a := range args {
		if strings.HasPrefix(a, "-") {
			continue // a flag before the command (there are none today)
		}
		return a == "agent" || a == "monitor" && !slices.ContainsFunc(args[i+1:], isOnce)
	}
	return false
}

// isOnce reports whether a is the flag --once (given true).
func isOnce(a string) bool { return a == "--once" || a == "--once=true" }

func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// flagValueError words a flag value that did not parse as a boolean or a
// number the way volley's own checks do, naming the flag and what it
// takes, where pflag passes strconv's words on; other errors pass as they
// are.
func flagValueError(err error) error {
	var bad *pflag.InvalidValueError
	var num *strconv.NumError
	if !errors.As(err, &bad) || !errors.As(err, &num) {
		return err
	}
	return fmt.Errorf("--%s %q: want %s", bad.GetFlag().Name, bad.GetValue(), flagTakes(bad.GetFlag().Value.Type(), errors.Is(num.Err, strconv.ErrRange)))
}

// flagTakes says what a flag of pflag's type typ takes; its range, for a
// signed type, when the value was out of it, and always for an unsigned
// one, whose least is the point.
func flagTakes(typ string, outOfRange bool) string {
	whole := func(lo int64, hi uint64) string { return fmt.Sprintf("a whole number from %d to %d", lo, hi) }
	switch {
	case typ == "bool":
		return "true or false"
	case (typ == "int" || typ == "int64" || typ == "int32") && !outOfRange:
		return "a whole number"
	case typ == "int" || typ == "int64":
		return whole(math.MinInt64, math.MaxInt64)
	case typ == "int32":
		return whole(math.MinInt32, math.MaxInt32)
	case typ == "uint" || typ == "uint64":
		return whole(0, math.MaxUint64)
	case typ == "uint32":
		return whole(0, math.MaxUint32)
	case typ == "uint16":
		return whole(0, math.MaxUint16)
	case typ == "uint8":
		return whole(0, math.MaxUint8)
	}
	return "a number"
}
