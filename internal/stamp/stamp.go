// Package stamp encodes and decodes STAMP packets (RFC 8762, Simple
// Two-way Active Measurement Protocol, with RFC 8972's Session-Sender
// Identifier and TLVs), and answers them as a Session-Reflector does.
//
// STAMP's packets are not volley's: a STAMP peer is a router, a switch or
// another tool. The client speaks it through an adapter (package foreign),
// the server through its --stamp listener. Like package wire, this one is
// pure encoding: times are integers, addresses the caller's, and decoding
// never allocates or panics.
//
// API SKETCH (scaffold; the implementation replaces the bodies):
package stamp

import "errors"

// Port is STAMP's well-known UDP port (RFC 8762 §4.1).
const Port = 862

// The sizes of the packets without TLVs: both sides' packets are the same
// size in each mode (RFC 8762 §4.2, §4.3).
const (
	BaseLen     = 44  // unauthenticated mode
	AuthBaseLen = 112 // authenticated mode
)

// Errors of decoding.
var (
	ErrShort = errors.New("stamp: packet shorter than its mode's base length")
	ErrAuth  = errors.New("stamp: HMAC does not match")
)

// Time is a 64-bit NTP timestamp: seconds since 1900 in the upper 32 bits,
// the fraction in the lower 32 (RFC 5905 §6).
type Time uint64

// FromUnixNano returns the NTP time of ns nanoseconds since 1970.
func FromUnixNano(ns int64) Time { panic("stamp: scaffold") }

// UnixNano returns t in nanoseconds since 1970.
func (t Time) UnixNano() int64 { panic("stamp: scaffold") }

// ErrorEstimate is RFC 4656 §4.1.2's error estimate: S (synchronized), Z
// (the timestamp format: 0 NTP), Scale and Multiplier.
type ErrorEstimate uint16

// Sender is a Session-Sender packet's fields (RFC 8762 §4.2, RFC 8972 §3).
type Sender struct {
	Seq  uint32
	T1   Time
	Err  ErrorEstimate
	SSID uint16
}

// Reflected is a Session-Reflector packet's fields (RFC 8762 §4.3).
type Reflected struct {
	Seq       uint32 // the reflector's (stateful) or the sender's (stateless)
	T3        Time   // the reflector's transmit time
	Err       ErrorEstimate
	SSID      uint16
	T2        Time // the reflector's receive time
	SenderSeq uint32
	SenderT1  Time
	SenderErr ErrorEstimate
	SenderTTL uint8
}
