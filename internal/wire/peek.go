package wire

import "encoding/binary"

// Reading a field of a message without decoding it: what a reflector's
// transport asks of every message it reads, without allocating.

// FlagsOf returns the flags of the message msg without decoding the rest
// (0 when msg is shorter than a header).
func FlagsOf(msg []byte) Flags {
	if len(msg) < HeaderLen {
		return 0
	}
	return Flags(binary.BigEndian.Uint16(msg[4:]))
}

// HoldOf returns the hold a probe asks for (µs) without decoding it, and
// whether msg is a volley probe at all.
func HoldOf(msg []byte) (micro uint32, probe bool) {
	if !isProbe(msg) {
		return 0, false
	}
	return binary.BigEndian.Uint32(msg[60:]), true
}

// ReplySizeOf returns the reply size a probe asks for without decoding
// it, or 0 when msg is not a volley probe.
func ReplySizeOf(msg []byte) int {
	if !isProbe(msg) {
		return 0
	}
	return int(binary.BigEndian.Uint32(msg[56:]))
}

// isProbe reports whether msg has a volley probe's header.
func isProbe(msg []byte) bool {
	return len(msg) >= HeaderLen && binary.BigEndian.Uint16(msg) == Magic && Type(msg[3]) == TypeProbe
}
