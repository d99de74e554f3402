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

// ParseRate reads a rate with an optional k or M suffix (thousands,
// millions; either case), as iperf's rates: 2.5k is 2500.
func ParseRate(s string) (float64, error) {
	mult, num := 1.0, s
	if n := len(s); n > 0 {
		switch s[n-1] {
		case 'K', 'k':
			mult, num = 1e3, s[:n-1]
		case 'M', 'm':
			mult, num = 1e6, s[:n-1]
		}
	}
	f, err := strconv.ParseFloat(num, 64)
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) || strings.ContainsAny(num, "xXpP_") {
		return 0, fmt.Errorf("%w: %q: want a number, optionally with k or M (thousands, millions)", ErrSyntax, s)
	}
	return f * mult, nil
}

// FormatRate writes f as ParseRate reads it, without an exponent: 2e6 is
// 2M, 1500 is 1.5k, 0.5 is 0.5.
func FormatRate(f float64) string {
	switch a := math.Abs(f); {
	case a >= 1e6:
		return strconv.FormatFloat(f/1e6, 'f', -1, 64) + "M"
	case a >= 1e3:
		return strconv.FormatFloat(f/1e3, 'f', -1, 64) + "k"
	}
	return strconv.FormatFloat(f, 'f', -1, 64)
}

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
