package report

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/volley-net/volley/internal/result"
)

// TestIperfUnits: the iperf format picks its units by magnitude as iperf
// 2's adaptive formats do, in four places (padded as iperf 2 pads them).
func TestIperfUnits(t *testing.T) {
	for _, tt := range []struct {
		v    float64
		bits bool
		want string
	}{
		{0, false, "0.000 Byte"},
		{0, true, "0.000 bit"},
		{100, false, " 100 Byte"},
		{1000, false, "1000 Byte"},
		{2000, false, "1.95 KByte"},
		{16000, true, "16.0 Kbit"},
		{999, true, " 999 bit"},
		{1000, true, "1.00 Kbit"},
		{10 << 20, false, "10.0 MByte"},
		{123.4e6, true, " 123 Mbit"},
		{1e9, true, "1.00 Gbit"},
		{3 << 40, false, "3.00 TByte"},
		{5e15, true, "5000 Tbit"},
	} {
		base, units := 1024.0, byteUnits
		if tt.bits {
			base, units = 1000, bitUnits
		}
		if got := iperfAdaptive(tt.v, base, units); got != tt.want {
			t.Errorf("iperfAdaptive(%v, bits %t) = %q, want %q", tt.v, tt.bits, got, tt.want)
		}
	}
	// 20 bouncebacks of 100 bytes in a second: 2000 bytes both ways.
	iv := result.Interval{Start: 0, End: time.Second, Throughput: result.Throughput{BytesUp: 1000, BytesDown: 1000}}
	var b bytes.Buffer
	if err := WriteIperfInterval(&b, iv, 0); err != nil {
		t.Fatal(err)
	}
	if want := "1.95 KBytes  16.0 Kbits/sec"; !strings.Contains(b.String(), want) {
		t.Errorf("iperf line %q, want %q in it", b.String(), want)
	}
}

// TestTextHeaderMix: a workload run's header describes the mix, entry by
// entry, not the largest entry's sizes.
func TestTextHeaderMix(t *testing.T) {
	c := result.Config{Transport: "udp", RemoteAddr: "127.0.0.1:7766", LocalAddr: "127.0.0.1:40000", Size: 1400, ReplySize: 500,
		Hold: time.Millisecond, Granted: result.Grant{ReplySize: 500, Hold: time.Millisecond}, Window: 1, Timeout: time.Second, Count: 400, Seed: 5}
	mix := []result.WorkloadEntry{
		{Name: "small", Weight: 3, Size: 100, ReplySize: 500},
		{Name: "big", Weight: 1, Size: 1400, Hold: time.Millisecond, Gap: 2 * time.Millisecond},
	}
	var b bytes.Buffer
	if err := WriteTextHeaderMix(&b, c, mix); err != nil {
		t.Fatal(err)
	}
	got := b.String()
	for _, want := range []string{
		"a mix of 2 probe shapes drawn by weight (--workload, seed 5), window 1",
		"\n  small: weight 3 (75%), 100-byte probes, 500-byte replies\n",
		"\n  big: weight 1 (25%), 1400-byte probes, replies as large, held 1.00ms, then a gap of 2.00ms\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("header:\n%s\nwant %q in it", got, want)
		}
	}
	if strings.Contains(got, "1400-byte probes and") {
		t.Errorf("header:\n%s\ndescribes one entry's sizes as the run's", got)
	}
	b.Reset()
	if err := WriteTextHeaderMix(&b, c, mix[:1]); err != nil {
		t.Fatal(err)
	}
	if got := b.String(); !strings.Contains(got, "one probe shape (--workload, seed 5)") {
		t.Errorf("header of a one-entry workload:\n%s\nwant \"one probe shape\", not a mix of 1", got)
	}
}

// TestErrorNotInReport: the run's error is said once, on stderr by the
// command line; the text and dping reports do not repeat it.
func TestErrorNotInReport(t *testing.T) {
	res := fixture()
	res.Error = "the reflector ended the session at udp://127.0.0.1:7766 after 1s"
	for name, write := range map[string]func(*bytes.Buffer) error{
		"text":  func(b *bytes.Buffer) error { return WriteText(b, res) },
		"dping": func(b *bytes.Buffer) error { return WriteDping(b, res) },
	} {
		var b bytes.Buffer
		if err := write(&b); err != nil {
			t.Fatal(err)
		}
		if strings.Contains(b.String(), res.Error) {
			t.Errorf("%s report repeats the error:\n%s", name, b.String())
		}
	}
}

// TestThresholdSkipInHeader: the header says which probes the threshold
// leaves alone.
func TestThresholdSkipInHeader(t *testing.T) {
	c := result.Config{Transport: "udp", Window: 1, Timeout: time.Second, Duration: time.Second, Threshold: 200 * time.Microsecond, ThresholdSkip: 10}
	var b bytes.Buffer
	if err := WriteTextHeader(&b, c); err != nil {
		t.Fatal(err)
	}
	if want := "stopping at an RTT above 200µs after the first 10 probes"; !strings.Contains(b.String(), want) {
		t.Errorf("header %q, want %q in it", b.String(), want)
	}
}
