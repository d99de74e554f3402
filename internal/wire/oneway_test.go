package wire

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"math"
	"reflect"
	"testing"
)

// oneWayVector is a one-way results block written out by hand from the
// package diagram: 5 received, 1 duplicate, 2 reordered; delays 1000 and
// 3000 ns with a 3-byte histogram; an IPDV of one value, 2000 ns, with a
// 2-byte histogram.
const oneWayVector = `
4f57 01 01 0000007d
0000000000000005
0000000000000001
0000000000000002

0000000000000002
409f400000000000
413e848000000000
00000000000003e8
0000000000000bb8
00000003 aabbcc

0000000000000001
409f400000000000
0000000000000000
00000000000007d0
00000000000007d0
00000002 ddee`

var oneWayWant = OneWayResults{
	Received: 5, Duplicates: 1, Reordered: 2,
	Delay: Snapshot{Count: 2, Mean: 2000, M2: 2_000_000, Min: 1000, Max: 3000, Histogram: []byte{0xaa, 0xbb, 0xcc}},
	IPDV:  Snapshot{Count: 1, Mean: 2000, Min: 2000, Max: 2000, Histogram: []byte{0xdd, 0xee}}, HasIPDV: true,
}

// oneWayBelowVector is a block with flag bit 1, written out by hand from
// the package diagram: nothing received, no IPDV; delays -5 and 5 ns, a
// 2-byte histogram from zero up and a 1-byte one below zero.
const oneWayBelowVector = `
4f57 01 02 00000053
0000000000000000
0000000000000000
0000000000000000

0000000000000002
0000000000000000
4049000000000000
fffffffffffffffb
0000000000000005
00000002 6864
00000001 62`

var oneWayBelowWant = OneWayResults{
	Delay: Snapshot{Count: 2, M2: 50, Min: -5, Max: 5, Histogram: []byte("hd"), Below: []byte("b")},
}

func TestOneWayKnownAnswer(t *testing.T) {
	for _, tt := range []struct {
		name   string
		vector string
		want   OneWayResults
	}{
		{"IPDV", oneWayVector, oneWayWant},
		{"below zero", oneWayBelowVector, oneWayBelowWant},
	} {
		t.Run(tt.name, func(t *testing.T) {
			b := mustHex(t, tt.vector)
			if got := int(binary.BigEndian.Uint32(b[4:])); got != len(b) {
				t.Fatalf("the vector is %d bytes, and says %d", len(b), got)
			}
			var got OneWayResults
			if err := got.Decode(b); err != nil {
				t.Fatalf("Decode(%x) = %v", b, err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("Decode(%x) = %+v, want %+v", b, got, tt.want)
			}
			enc, err := tt.want.AppendBinary(nil)
			if err != nil || !bytes.Equal(enc, b) {
				t.Fatalf("AppendBinary = %x, %v; want %x", enc, err, b)
			}
			if n := tt.want.Len(); n != len(b) {
				t.Fatalf("Len = %d, want %d", n, len(b))
			}
		})
	}
}

func TestOneWayRoundTrip(t *testing.T) {
	tests := []struct {
		name string
		in   OneWayResults
	}{
		{"empty", OneWayResults{}},
		{"no IPDV", OneWayResults{Received: 1 << 40, Delay: Snapshot{Count: 3, Mean: -1.5, M2: math.Inf(1), Min: -7, Max: math.MaxInt64, Histogram: []byte("hdr")}}},
		{"IPDV", oneWayWant},
		{"IPDV without histograms", OneWayResults{Duplicates: 9, HasIPDV: true, IPDV: Snapshot{Count: 1, Mean: math.NaN()}}},
		{"large histogram", OneWayResults{Reordered: 3, Delay: Snapshot{Histogram: bytes.Repeat([]byte{7}, 20000)}, HasIPDV: true}},
		{"below zero", oneWayBelowZero},
		{"below zero, no IPDV", OneWayResults{Delay: oneWayBelowZero.Delay}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			prefix := []byte("after a header")
			b, err := tt.in.AppendBinary(prefix)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.HasPrefix(b, []byte("after a header")) || len(b)-len(prefix) != tt.in.Len() {
				t.Fatalf("AppendBinary wrote %d bytes after %q, want %d after it", len(b)-len(prefix), b[:len(prefix)], tt.in.Len())
			}
			p := append(b[len(prefix):], "and a tag"...) // what follows the block is not its
			var got OneWayResults
			if err := got.Decode(p); err != nil {
				t.Fatalf("Decode(AppendBinary(%+v)) = %v", tt.in, err)
			}
			again, _ := got.AppendBinary(nil)
			if !bytes.Equal(again, b[len(prefix):]) {
				t.Fatalf("AppendBinary(Decode(b)) = %x, want %x", again, b[len(prefix):])
			}
			if got.HasIPDV != tt.in.HasIPDV || got.Received != tt.in.Received || got.Delay.Count != tt.in.Delay.Count ||
				!bytes.Equal(got.Delay.Histogram, tt.in.Delay.Histogram) || !bytes.Equal(got.Delay.Below, tt.in.Delay.Below) ||
				(tt.in.HasIPDV && !bytes.Equal(got.IPDV.Below, tt.in.IPDV.Below)) {
				t.Fatalf("Decode = %+v, want %+v", got, tt.in)
			}
		})
	}
}

// oneWayBelowZero has delays below zero, as between two hosts' clocks.
var oneWayBelowZero = OneWayResults{
	Delay: Snapshot{Count: 2, Mean: 0, M2: 50, Min: -5, Max: 5, Histogram: []byte("from zero"), Below: []byte("below")},
	IPDV:  Snapshot{Count: 1, Min: 10, Max: 10, Mean: 10, Histogram: []byte("ipdv")}, HasIPDV: true,
}

func TestOneWayDecodeErrors(t *testing.T) {
	good, _ := oneWayWant.AppendBinary(nil)
	below, _ := oneWayBelowZero.AppendBinary(nil)
	with := func(f func(b []byte) []byte) []byte { return f(bytes.Clone(good)) }
	tests := []struct {
		name string
		b    []byte
		want error
	}{
		{"empty", nil, ErrShort},
		{"shorter than the fixed part", good[:OneWayFixedLen-1], ErrShort},
		{"cut", good[:len(good)-1], ErrShort},
		{"a reflector's JSON from before", []byte(`{"received":5,"duplicates":0,"reordered":0,"delay":{"count":5}}`), ErrMagic},
		{"version 2", with(func(b []byte) []byte { b[2] = 2; return b }), ErrVersion},
		{"length under the fixed part", with(func(b []byte) []byte { binary.BigEndian.PutUint32(b[4:], 31); return b }), ErrLength},
		{"no room for the delays", with(func(b []byte) []byte { binary.BigEndian.PutUint32(b[4:], OneWayFixedLen); return b }), ErrLength},
		{"a histogram past the length", with(func(b []byte) []byte {
			binary.BigEndian.PutUint32(b[OneWayFixedLen+40:], 1<<32-1)
			return b
		}), ErrLength},
		{"IPDV flag, no IPDV", with(func(b []byte) []byte {
			binary.BigEndian.PutUint32(b[4:], uint32(OneWayFixedLen+oneWayWant.Delay.len(false)))
			return b
		}), ErrLength},
		{"bytes left over", with(func(b []byte) []byte { b[3] = 0; return b }), ErrLength},
		{"below-zero flag, none", with(func(b []byte) []byte { b[3] |= oneWayBelow; return b }), ErrLength},
		{"below-zero flag, every histogram below zero empty", func() []byte {
			r := oneWayBelowZero
			r.Delay.Below = nil
			b, _ := r.AppendBinary(nil)
			// The same block with the flag and an empty histogram below
			// zero after each distribution.
			b[3] |= oneWayBelow
			at := OneWayFixedLen + r.Delay.len(false)
			b = append(b[:at:at], append([]byte{0, 0, 0, 0}, b[at:]...)...)
			b = append(b, 0, 0, 0, 0)
			binary.BigEndian.PutUint32(b[4:], uint32(len(b)))
			return b
		}(), ErrLength},
		{"a histogram below zero past the length", func() []byte {
			b := bytes.Clone(below)
			at := OneWayFixedLen + SnapshotFixedLen + len(oneWayBelowZero.Delay.Histogram)
			binary.BigEndian.PutUint32(b[at:], 1<<31)
			return b
		}(), ErrLength},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := OneWayResults{Received: 42}
			if err := r.Decode(tt.b); !errors.Is(err, tt.want) {
				t.Fatalf("Decode(%x) = %v, want %v", tt.b, err, tt.want)
			}
			if r.Received != 42 {
				t.Fatalf("a failed Decode left %+v, want the results as they were", r)
			}
			if allocs := testing.AllocsPerRun(10, func() { _ = r.Decode(tt.b) }); allocs != 0 {
				t.Fatalf("Decode(%x) allocates %.0f times", tt.b, allocs)
			}
		})
	}
	var r OneWayResults
	if allocs := testing.AllocsPerRun(10, func() { _ = r.Decode(good) }); allocs != 0 {
		t.Fatalf("Decode of good results allocates %.0f times", allocs)
	}
}

// oldJSONMin is the least length the JSON form reflectors sent the
// results in before the binary block could have for r: its keys and
// punctuation, each number one digit, and the histograms in base64
// (written out here, so that wire need not import encoding/json even in
// its tests).
func oldJSONMin(r *OneWayResults) int {
	dist := func(s *Snapshot) int {
		return len(`{"count":0,"mean":0,"m2":0,"min":0,"max":0,"histogram":""}`) + base64.StdEncoding.EncodedLen(len(s.Histogram))
	}
	n := len(`{"received":0,"duplicates":0,"reordered":0,"delay":}`) + dist(&r.Delay)
	if r.HasIPDV {
		n += len(`,"ipdv":`) + dist(&r.IPDV)
	}
	return n
}

// TestOneWayFitsWhereJSONFit: the binary block is shorter than the JSON
// form was for the same results, with the IPDV and without it, so a
// CloseAck that had room for the results (or for them without the IPDV)
// has room for them still.
func TestOneWayFitsWhereJSONFit(t *testing.T) {
	for _, h := range []int{0, 1, 100, 3000, 12000} {
		for _, r := range []OneWayResults{{}, oneWayWant} {
			r.Delay.Histogram = make([]byte, h)
			r.IPDV.Histogram = make([]byte, h/2)
			for _, ipdv := range []bool{true, false} {
				r.HasIPDV = ipdv
				if bin, old := r.Len(), oldJSONMin(&r); bin >= old {
					t.Errorf("results %+v: %d bytes, the JSON form at least %d; want fewer", r.Delay, bin, old)
				}
			}
		}
	}
}

func BenchmarkOneWayDecode(b *testing.B) {
	buf, _ := oneWayWant.AppendBinary(nil)
	var r OneWayResults
	b.ReportAllocs()
	for b.Loop() {
		if err := r.Decode(buf); err != nil {
			b.Fatal(err)
		}
	}
}
