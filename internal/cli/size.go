package cli

import (
	"fmt"
	"strconv"
	"strings"
)

// byteSize is a flag of bytes that takes a K or M suffix (KiB, MiB), as
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
	}
	n, err := strconv.Atoi(num)
	if err != nil || n < 0 {
		return fmt.Errorf("want a number of bytes, optionally with K or M (KiB, MiB)")
	}
	*s = byteSize(n * mult)
	return nil
}

func (s *byteSize) Type() string { return "bytes" }
