// Package units reads and writes the quantities volley's flags and
// workload files take: sizes in bytes with binary suffixes (512K), rates
// with decimal suffixes (2M), and durations that may be bare seconds (2),
// as iperf's are. Each value prints back in the form a user would type.
package units

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// ErrSyntax says a value is not written as its unit wants.
var ErrSyntax = errors.New("units: bad value")

// ParseBytes reads a number of bytes with an optional K, M or G suffix
// (KiB, MiB, GiB; either case), as iperf's sizes: 512K is 524,288 bytes.
// The result is at most 1<<40, far beyond anything volley sends.
func ParseBytes(s string) (int64, error) {
	mult, num := int64(1), s
	if n := len(s); n > 0 {
		switch s[n-1] {
		case 'K', 'k':
			mult, num = 1<<10, s[:n-1]
		case 'M', 'm':
			mult, num = 1<<20, s[:n-1]
		case 'G', 'g':
			mult, num = 1<<30, s[:n-1]
		}
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || n < 0 || n > (1<<40)/mult {
		return 0, fmt.Errorf("%w: %q: want a number of bytes, optionally with K, M or G (KiB, MiB, GiB)", ErrSyntax, s)
	}
	return n * mult, nil
}

// FormatBytes writes n as ParseBytes reads it, with the largest suffix
// that divides it exactly: 10485760 is 10M, 1500 is 1500.
func FormatBytes(n int64) string {
	for _, u := range []struct {
		suffix string
		size   int64
	}{{"G", 1 << 30}, {"M", 1 << 20}, {"K", 1 << 10}} {
		if n != 0 && n%u.size == 0 {
			return strconv.FormatInt(n/u.size, 10) + u.suffix
		}
	}
	return strconv.FormatInt(n, 10)
}

// suffix is a decimal multiple a rate may be written with.
type suffix struct {
	name string
	mult float64
}

// decimal are the suffixes of rates, largest first: billions (bits/s
// only: decimal[1:] are a probe rate's), millions, thousands.
var decimal = []suffix{{"G", 1e9}, {"M", 1e6}, {"k", 1e3}}

// parseDecimal reads a number with an optional one of suffixes (either
// case).
func parseDecimal(s string, suffixes []suffix) (float64, bool) {
	mult, num := 1.0, s
	for _, u := range suffixes {
		if n := len(s); n > 0 && strings.EqualFold(s[n-1:], u.name) {
			mult, num = u.mult, s[:n-1]
			break
		}
	}
	f, err := strconv.ParseFloat(num, 64)
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) || strings.ContainsAny(num, "xXpP_") {
		return 0, false
	}
	return f * mult, true
}

// formatDecimal writes f with the largest of suffixes it reaches, without
// an exponent.
func formatDecimal(f float64, suffixes []suffix) string {
	for _, u := range suffixes {
		if math.Abs(f) >= u.mult {
			return strconv.FormatFloat(f/u.mult, 'f', -1, 64) + u.name
		}
	}
	return strconv.FormatFloat(f, 'f', -1, 64)
}

// ParseRate reads a rate with an optional k or M suffix (thousands,
// millions; either case), as iperf's rates: 2.5k is 2500.
func ParseRate(s string) (float64, error) {
	f, ok := parseDecimal(s, decimal[1:])
	if !ok {
		return 0, fmt.Errorf("%w: %q: want a number, optionally with k or M (thousands, millions)", ErrSyntax, s)
	}
	return f, nil
}

// FormatRate writes f as ParseRate reads it, without an exponent: 2e6 is
// 2M, 1500 is 1.5k, 0.5 is 0.5.
func FormatRate(f float64) string { return formatDecimal(f, decimal[1:]) }

// ParseBitRate reads a rate of bits/s with an optional k, M or G suffix
// (thousands, millions, billions; either case), as iperf's: 100M is
// 100,000,000 bits/s. It takes no negative rate.
func ParseBitRate(s string) (float64, error) {
	f, ok := parseDecimal(s, decimal)
	if !ok || f < 0 {
		return 0, fmt.Errorf("%w: %q: want bits/s, a number of 0 or more, optionally with k, M or G (thousands, millions, billions), such as 100M or 1G", ErrSyntax, s)
	}
	return f, nil
}

// FormatBitRate writes f as ParseBitRate reads it, without an exponent:
// 1e9 is 1G, 2.5e6 is 2.5M, 8000 is 8k.
func FormatBitRate(f float64) string { return formatDecimal(f, decimal) }

// ParseDuration reads a Go duration (1.5s, 250ms, 10us or 10µs). With
// bareSeconds, a number without a unit is seconds, as iperf's -t and -i
// take it: 2 is 2s and 0.5 is 500ms.
func ParseDuration(s string, bareSeconds bool) (time.Duration, error) {
	if bareSeconds {
		if f, err := strconv.ParseFloat(s, 64); err == nil && !strings.ContainsAny(s, "xXpPiInN_") {
			if math.Abs(f) > math.MaxInt64/float64(time.Second) {
				return 0, fmt.Errorf("%w: %q: too long", ErrSyntax, s)
			}
			return time.Duration(math.Round(f * float64(time.Second))), nil
		}
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		if bareSeconds {
			return 0, fmt.Errorf("%w: %q: want seconds (2, 0.5) or a duration with a unit (2s, 500ms, 100us)", ErrSyntax, s)
		}
		return 0, fmt.Errorf("%w: %q: want a duration with a unit, such as 2s, 500ms or 100us", ErrSyntax, s)
	}
	return d, nil
}

// FormatDuration writes d as time.Duration does, but 0 as "0" and without
// the zero parts Go adds: 1m0s is 1m, 1h0m0s is 1h.
func FormatDuration(d time.Duration) string {
	if d == 0 {
		return "0"
	}
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}
