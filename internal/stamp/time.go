package stamp

import "math/bits"

// Time is a 64-bit NTP timestamp: seconds since 1900 in the upper 32 bits,
// the fraction in the lower 32 (RFC 5905 §6).
//
// The seconds wrap in 2036 (NTP era 1): a time whose seconds have their
// top bit clear is taken to be in era 1, so the times from 1968 to 2104
// convert both ways.
type Time uint64

// ntpUnix is the seconds from 1900 to 1970.
const ntpUnix = 2208988800

const nsPerSec = 1_000_000_000

// FromUnixNano returns the NTP time of ns nanoseconds since 1970, the
// fraction rounded to the nearest 2^-32 s. A nanosecond is about four
// fraction steps, so UnixNano(FromUnixNano(ns)) == ns for every ns in
// the range Time covers.
func FromUnixNano(ns int64) Time {
	sec, rem := ns/nsPerSec, ns%nsPerSec
	if rem < 0 {
		sec, rem = sec-1, rem+nsPerSec
	}
	// rem < 1e9, so rem<<32 < 2^62 and rounding never carries into sec.
	frac := (uint64(rem)<<32 + nsPerSec/2) / nsPerSec
	return Time(uint64(uint32(sec+ntpUnix))<<32 | frac)
}

// UnixNano returns t in nanoseconds since 1970, the fraction rounded to
// the nearest nanosecond.
func (t Time) UnixNano() int64 {
	sec := int64(t>>32) - ntpUnix
	if t>>63 == 0 {
		sec += 1 << 32 // era 1: from 2036-02-07
	}
	frac := (uint64(uint32(t))*nsPerSec + 1<<31) >> 32
	return sec*nsPerSec + int64(frac)
}

// ErrorEstimate is RFC 4656 §4.1.2's error estimate: S (synchronized), Z
// (the timestamp format: 0 NTP, 1 PTP, RFC 8762 §4.2.1), Scale and
// Multiplier.
//
//	 0                   1
//	 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|S|Z|   Scale   |   Multiplier  |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//
// The error is Multiplier × 2^(Scale−32) seconds.
type ErrorEstimate uint16

// NewErrorEstimate returns the error estimate of a clock synchronized or
// not whose error is at most ns nanoseconds, in NTP format: the smallest
// scale whose multiplier holds it, rounded up (an estimate never
// understates). The multiplier is never 0 (RFC 4656 forbids it): ns <= 0
// gives the smallest error there is, 2^-32 s.
func NewErrorEstimate(synchronized bool, ns int64) ErrorEstimate {
	var e ErrorEstimate
	if synchronized {
		e = 1 << 15
	}
	if ns <= 0 {
		return e | 1
	}
	// The error in units of 2^-32 s, 128 bits: ns × 2^32 / 1e9, rounded up.
	hi, lo := bits.Mul64(uint64(ns), 1<<32)
	var scale uint
	for hi >= nsPerSec { // keep Div64's quotient within 64 bits
		lo = lo>>1 | hi<<63
		hi >>= 1
		scale++
	}
	q, r := bits.Div64(hi, lo, nsPerSec)
	if r != 0 {
		q++
	}
	for q > 0xff {
		q = (q + 1) >> 1 // round up as it shrinks
		scale++
	}
	if scale > 63 {
		return e | 63<<8 | 0xff
	}
	return e | ErrorEstimate(scale)<<8 | ErrorEstimate(q)
}

// Synchronized is the S bit: the clock is synchronized to UTC by an
// external source.
func (e ErrorEstimate) Synchronized() bool { return e&(1<<15) != 0 }

// PTP is the Z bit: the timestamps are in PTPv2's truncated format, not
// NTP's.
func (e ErrorEstimate) PTP() bool { return e&(1<<14) != 0 }

// Scale is the estimate's 6-bit scale.
func (e ErrorEstimate) Scale() uint8 { return uint8(e>>8) & 0x3f }

// Multiplier is the estimate's 8-bit multiplier.
func (e ErrorEstimate) Multiplier() uint8 { return uint8(e) }

// Nanoseconds returns the error in nanoseconds, rounded up, saturating at
// the largest int64.
func (e ErrorEstimate) Nanoseconds() int64 {
	// Multiplier × 1e9 × 2^Scale / 2^32: the product in 128 bits.
	hi, lo := bits.Mul64(uint64(e.Multiplier())*nsPerSec, 1<<e.Scale())
	if hi>>31 != 0 {
		return 1<<63 - 1
	}
	ns := hi<<32 | lo>>32
	if uint32(lo) != 0 {
		ns++
	}
	if ns > 1<<63-1 {
		return 1<<63 - 1
	}
	return int64(ns)
}

// PTPUnixNano returns t read as PTPv2's truncated timestamp (seconds
// since 1970 in the upper 32 bits, nanoseconds in the lower: the format
// of an error estimate with Z set), in nanoseconds since 1970. PTP counts
// TAI; no offset to UTC is applied, as the reflector's clock is the
// reflector's business (its Synchronized says what it claims).
func (t Time) PTPUnixNano() int64 {
	return int64(t>>32)*nsPerSec + int64(uint32(t))
}

// UnixNanoIn returns t in nanoseconds since 1970 in the format e says:
// PTP's with Z set, NTP's without.
func (t Time) UnixNanoIn(e ErrorEstimate) int64 {
	if e.PTP() {
		return t.PTPUnixNano()
	}
	return t.UnixNano()
}
