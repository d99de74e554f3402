package stamp

import "encoding/binary"

// RFC 8972 §4's TLVs follow the base packet, each a 4-byte header and its
// value:
//
//	 0                   1                   2                   3
//	 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|U|M|I|  Rsvd |     Type      |             Length            |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	~                      Value (Length octets)                    ~
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//
// The flags are set by the reflector, in its copy: U, the type is
// unrecognized; M, the TLV is malformed; I, its integrity check failed.
const (
	FlagU = 0x80
	FlagM = 0x40
	FlagI = 0x20

	// TLVHeaderLen is the length of a TLV's header.
	TLVHeaderLen = 4
)

// TypeExtraPadding is RFC 8972 §4.1's Extra Padding TLV: its value is
// padding, reflected as it came, which makes a packet the size asked for.
const TypeExtraPadding = 1

// PutPadding writes an Extra Padding TLV filling b (at least TLVHeaderLen
// bytes, at most TLVHeaderLen+65535): its header, and zeros. It returns
// false, writing nothing, when b cannot hold one.
func PutPadding(b []byte) bool {
	if len(b) < TLVHeaderLen || len(b) > TLVHeaderLen+0xffff {
		return false
	}
	b[0], b[1] = 0, TypeExtraPadding
	binary.BigEndian.PutUint16(b[2:], uint16(len(b)-TLVHeaderLen))
	clear(b[TLVHeaderLen:])
	return true
}

// ReflectTLVs turns the TLVs of a request, b (the bytes after its base
// packet), into the reply's, in place, without changing their length:
//
//   - Extra Padding is reflected as it came, flags cleared;
//   - a TLV of any other type is copied with U set (this reflector
//     implements no other; RFC 8972 §4 has it copied so the sender learns
//     that);
//   - a TLV whose length runs past the packet, or a tail too short for a
//     TLV's header, is malformed: M is set on it (when its flags byte is
//     there) and the rest of the packet is copied as it came.
//
// b all zeros is padding a sender that knows no TLVs added (RFC 8762
// STAMP or TWAMP-light): it is left as it is, not read as empty TLVs of
// the reserved type 0.
func ReflectTLVs(b []byte) {
	if allZero(b) {
		return
	}
	for len(b) > 0 {
		if len(b) < TLVHeaderLen {
			b[0] |= FlagM
			return
		}
		l := int(binary.BigEndian.Uint16(b[2:]))
		if TLVHeaderLen+l > len(b) {
			b[0] |= FlagM
			return
		}
		if b[1] == TypeExtraPadding {
			b[0] = 0
		} else {
			b[0] |= FlagU
		}
		b = b[TLVHeaderLen+l:]
	}
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}
