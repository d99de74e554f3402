package cli

import (
	"github.com/spf13/pflag"

	"github.com/volley-net/volley/internal/report"
	"github.com/volley-net/volley/internal/result"
	"github.com/volley-net/volley/internal/sockopt"
)

// The client's --ecn: the ECN bits of the probes, the traffic class
// byte's lower two (RFC 3168), beside --tos's or --dscp's DSCP.

// ecnCodes are --ecn's values and their code points.
var ecnCodes = map[string]int{"ect0": result.ECT0, "ect1": result.ECT1, "ce": result.CE}

// addECNFlag adds --ecn to the client's flags.
func addECNFlag(fl *pflag.FlagSet, p *string) {
	fl.StringVar(p, "ecn", "", "UDP: set the probes' ECN bits: ect0, ect1 or ce (with --tos's or --dscp's DSCP); the report says what the reflector saw")
}

// applyECN sets the ECN bits ecn names (none when "") in o's TOS, for a
// target of scheme. tosGiven says --tos gave the byte: its own ECN bits,
// when not 0, must be ecn's.
func applyECN(o *sockopt.Options, ecn string, tosGiven bool, scheme string) error {
	if ecn == "" {
		return nil
	}
	bits, ok := ecnCodes[ecn]
	switch {
	case !ok:
		return usagef("--ecn %q: want ect0, ect1 or ce", ecn)
	case scheme != "udp" && scheme != "stamp" && scheme != "echo":
		return usagef("--ecn is for udp://, stamp:// and echo:// targets (TCP sets its own ECN bits)")
	case tosGiven && o.TOS&3 != 0 && o.TOS&3 != bits:
		return usagef("--tos %d sets the ECN bits to %s and --ecn %s to %s: give them in one of the two (--tos %d --ecn %s)", o.TOS, report.ECNName(o.TOS), ecn, report.ECNName(bits), o.TOS&^3, ecn)
	}
	o.TOS = max(o.TOS, 0)&^3 | bits
	return nil
}
