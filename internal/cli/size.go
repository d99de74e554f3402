package cli

import (
	"fmt"
	"strconv"
	"strings"
)

// byteSize is a flag of bytes that takes a K, M or G suffix (KiB, MiB, GiB), as
// iperf's sizes do: 512K is 524,288 bytes.
type byteSize int

func (s *byteSize) String() string { return strconv.Itoa(int(*s)) }

func (s *byteSize) Set(v string) error {
	mult := 1
	num := v
	switch {
	case strings.HasSuffix(v, "K"), strings.HasSuffix(v, "k"):
		mult, num = 1<<10, v[:len(v)-1]
	case strings.HasSuffix(v, "M"), strings.HasSuffix(v, "m"):
		mult, num = 1<<20, v[:len(v)-1]
	case strings.HasSuffix(v, "G"), strings.HasSuffix(v, "g"):
		mult, num = 1<<30, v[:len(v)-1]
	}
	n, err := strconv.Atoi(num)
	if err != nil || n < 0 {
		return fmt.Errorf("want a number of bytes, optionally with K, M or G (KiB, MiB, GiB)")
	}
	*s = byteSize(n * mult)
	return nil
}

func (s *byteSize) Type() string { return "bytes" }

// rateFlag is --rate: probes/s, or "max" for as fast as the client can
// send.
type rateFlag struct {
	pps float64
	max bool
}

func (r *rateFlag) String() string {
	if r.max {
		return "max"
	}
	return strconv.FormatFloat(r.pps, 'g', -1, 64)
}

func (r *rateFlag) Set(v string) error {
	if v == "max" {
		r.max, r.pps = true, 0
		return nil
	}
	// Decimal suffixes, as iperf's rates: 100k is 100000 probes/s.
	mult := 1.0
	switch {
	case strings.HasSuffix(v, "k") || strings.HasSuffix(v, "K"):
		mult, v = 1e3, v[:len(v)-1]
	case strings.HasSuffix(v, "m") || strings.HasSuffix(v, "M"):
		mult, v = 1e6, v[:len(v)-1]
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil {
		return fmt.Errorf("want probes/s (k and M suffixes: thousands, millions), or max")
	}
	r.max, r.pps = false, f*mult
	return nil
}

func (r *rateFlag) Type() string { return "pps" }
