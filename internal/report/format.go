package report

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Duration formats d with three significant digits in the unit that reads
// best: 850ns, 25.4µs, 1.20ms, 12.0s.
func Duration(d time.Duration) string {
	if d < 0 {
		if d == math.MinInt64 {
			d++ // -d would overflow back to itself
		}
		return "-" + Duration(-d)
	}
	switch {
	case d < time.Microsecond:
		return strconv.FormatInt(int64(d), 10) + "ns"
	case d < time.Millisecond:
		return sig3(float64(d)/1e3, "µs", "ms", 1e3)
	case d < time.Second:
		return sig3(float64(d)/1e6, "ms", "s", 1e3)
	default:
		return sig3(float64(d)/1e9, "s", "", 0)
	}
}

// sig3 prints v (at least 1) with three significant digits and unit; if
// rounding carries it to next (1000 units), it prints in the next unit.
func sig3(v float64, unit, nextUnit string, next float64) string {
	digits := 2
	switch {
	case v >= 99.95:
		digits = 0
	case v >= 9.995:
		digits = 1
	}
	s := strconv.FormatFloat(v, 'f', digits, 64)
	if next > 0 && digits == 0 && math.Round(v) >= next {
		return "1.00" + nextUnit
	}
	return s + unit
}

// SI formats a rate with three significant digits and a k/M/G prefix.
func SI(v float64) string {
	prefixes := []string{"", "k", "M", "G", "T"}
	i := 0
	for v >= 999.5 && i < len(prefixes)-1 {
		v /= 1000
		i++
	}
	switch {
	case v == 0:
		return "0"
	case v >= 99.95 || (i == 0 && v == math.Trunc(v)):
		return fmt.Sprintf("%.0f%s", v, prefixes[i])
	case v >= 9.995:
		return fmt.Sprintf("%.1f%s", v, prefixes[i])
	default:
		return fmt.Sprintf("%.2f%s", v, prefixes[i])
	}
}

// Percent formats a percentile's name: 50 → "p50", 99.9 → "p99.9".
func Percent(p float64) string {
	return "p" + strconv.FormatFloat(p, 'f', -1, 64)
}

// Seconds formats an offset as seconds with two decimals.
func Seconds(d time.Duration) string {
	return strconv.FormatFloat(d.Seconds(), 'f', 2, 64)
}

func bar(share float64, width int) string {
	// A share read back from a saved file may be anything.
	share = min(max(share, 0), 1)
	if math.IsNaN(share) {
		share = 0
	}
	n := int(math.Round(share * float64(width)))
	if n == 0 && share > 0 {
		return "."
	}
	return strings.Repeat("#", n)
}
