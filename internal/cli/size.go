package cli

import (
	"errors"
	"strconv"
	"time"

	"github.com/spf13/pflag"

	"github.com/volley-net/volley/internal/units"
)

// The flags' value types. Each prints back in the form the user typed it
// (10M, not 10485760; 2M probes/s, not 2e+06), in errors and in --help's
// defaults; a flag left unset prints nothing, so that --help shows no
// "(default -1)".

// byteSize is a flag of bytes that takes a K, M or G suffix (KiB, MiB, GiB), as
// iperf's sizes do: 512K is 524,288 bytes.
type byteSize int

func (s byteSize) String() string { return units.FormatBytes(int64(s)) }

func (s *byteSize) Set(v string) error {
	n, err := units.ParseBytes(v)
	if err != nil {
		return errors.New("want a number of bytes, optionally with K, M or G (KiB, MiB, GiB)")
	}
	*s = byteSize(n)
	return nil
}

func (s *byteSize) Type() string { return "bytes" }

// rateFlag is --rate: probes/s, or "max" for as fast as the client can
// send.
type rateFlag struct {
	pps   float64
	max   bool
	given bool
}

func (r *rateFlag) String() string {
	switch {
	case r.max:
		return "max"
	case !r.given:
		return ""
	}
	return units.FormatRate(r.pps)
}

func (r *rateFlag) Set(v string) error {
	r.given = true
	if v == "max" {
		r.max, r.pps = true, 0
		return nil
	}
	// Decimal suffixes, as iperf's rates: 100k is 100000 probes/s.
	f, err := units.ParseRate(v)
	if err != nil {
		return errors.New("want probes/s (k and M suffixes: thousands, millions), or max")
	}
	r.max, r.pps = false, f
	return nil
}

func (r *rateFlag) Type() string { return "pps" }

// ppsFlag is a rate in probes/s with k and M suffixes, as --rate without
// max.
type ppsFlag float64

func (r ppsFlag) String() string { return units.FormatRate(float64(r)) }

func (r *ppsFlag) Set(v string) error {
	f, err := units.ParseRate(v)
	if err != nil {
		return errors.New("want probes/s (k and M suffixes: thousands, millions)")
	}
	*r = ppsFlag(f)
	return nil
}

func (r *ppsFlag) Type() string { return "pps" }

// durationFlag is a duration flag; with bareSeconds a number without a
// unit is seconds, as iperf's -t and -i take it.
type durationFlag struct {
	d           *time.Duration
	bareSeconds bool
}

func (f durationFlag) String() string {
	if f.d == nil {
		return ""
	}
	return units.FormatDuration(*f.d)
}

func (f durationFlag) Set(v string) error {
	d, err := units.ParseDuration(v, f.bareSeconds)
	if err != nil {
		if f.bareSeconds {
			return errors.New("want seconds (2, 0.5) or a duration with a unit (2s, 500ms, 100us)")
		}
		return errors.New("want a duration with a unit, such as 2s, 500ms or 100us")
	}
	*f.d = d
	return nil
}

func (f durationFlag) Type() string { return "duration" }

// durationVarP defines a duration flag with a default; bareSeconds as
// durationFlag's.
func durationVarP(fl *pflag.FlagSet, p *time.Duration, name, short string, def time.Duration, bareSeconds bool, usage string) *pflag.Flag {
	*p = def
	return fl.VarPF(durationFlag{d: p, bareSeconds: bareSeconds}, name, short, usage)
}

// optInt is an integer flag that may be left unset (it then holds unset,
// and prints nothing): --tos, --dscp and --ttl, whose 0 is a value.
type optInt struct {
	n     *int
	unset int
}

func (o optInt) String() string {
	if o.n == nil || *o.n == o.unset {
		return ""
	}
	return strconv.Itoa(*o.n)
}

func (o optInt) Set(v string) error {
	n, err := strconv.Atoi(v)
	if err != nil {
		return errors.New("want a whole number")
	}
	*o.n = n
	return nil
}

func (o optInt) Type() string { return "int" }

// optIntVar defines an optInt flag, holding unset until given.
func optIntVar(fl *pflag.FlagSet, p *int, name string, unset int, usage string) {
	*p = unset
	fl.Var(optInt{n: p, unset: unset}, name, usage)
}
