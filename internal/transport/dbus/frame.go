package dbus

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"unicode/utf8"
)

// The messages that carry volley's probes and replies, a method call or
// reply with one byte array (signature "ay"), are read without godbus's
// decoder, which builds every message through reflection and allocates a
// 4 KiB buffer for its strings (a fifth of each end's CPU in a D-Bus round
// trip): parseFrame takes the few header fields volley looks at, and the
// array, in place. Anything else, or anything parseFrame does not expect,
// goes to godbus.

// frame is what volley reads of a message without decoding it whole. Its
// slices are in the read buffer: valid until the next read.
type frame struct {
	typ         byte // godbus.Type
	flags       byte // godbus.Flags
	serial      uint32
	replySerial uint32
	path        []byte
	iface       []byte
	member      []byte
	sender      []byte
	sig         []byte
	bytes       []byte // the body's byte array, when sig is "ay"
}

// The header fields' codes (D-Bus specification, "Message Format").
const (
	fieldPath        = 1
	fieldInterface   = 2
	fieldMember      = 3
	fieldErrorName   = 4
	fieldReplySerial = 5
	fieldDestination = 6
	fieldSender      = 7
	fieldSignature   = 8
	fieldUnixFDs     = 9
)

// frameLen returns the length of the message that p starts with (at
// least fixedHeader bytes) and of its header (the fixed part and the
// fields, padded to 8 bytes), or an error if p starts no message.
func frameLen(p []byte) (n, head int, err error) {
	var order binary.ByteOrder
	switch p[0] {
	case 'l':
		order = binary.LittleEndian
	case 'B':
		order = binary.BigEndian
	default:
		return 0, 0, fmt.Errorf("a message in byte order %q", p[0])
	}
	if p[3] != 1 {
		return 0, 0, fmt.Errorf("a message of protocol version %d", p[3])
	}
	body, fields := int64(order.Uint32(p[4:])), int64(order.Uint32(p[12:]))
	h := fixedHeader + (fields+7)&^7
	if h+body > 1<<27 { // the protocol's limit
		return 0, 0, fmt.Errorf("a message of %d bytes", h+body)
	}
	return int(h + body), int(h), nil
}

// parseFrame reads the message p (a whole one, as frameLen measured it):
// false when it is not little-endian, has a header field of a type other
// than a string, object path, signature or uint32, or has a body other
// than one byte array (or none); the caller then decodes it with godbus.
func parseFrame(p []byte) (f frame, ok bool) {
	var end int
	f, end, ok = parseHeader(p)
	if !ok {
		return f, false
	}
	body := p[align(end, 8):]
	switch {
	case len(f.sig) == 0:
		return f, len(body) == 0
	case string(f.sig) != "ay" || len(body) < 4:
		return f, false
	}
	if n := binary.LittleEndian.Uint32(body); int64(n) != int64(len(body))-4 {
		return f, false
	}
	f.bytes = body[4:]
	return f, true
}

// parseHeader reads the fixed header and the header fields of the
// message p starts with, as parseFrame does, and returns where the fields
// end; p need hold nothing after them.
func parseHeader(p []byte) (f frame, end int, ok bool) {
	if p[0] != 'l' {
		return f, 0, false
	}
	le := binary.LittleEndian
	f.typ, f.flags, f.serial = p[1], p[2], le.Uint32(p[8:])
	end = fixedHeader + int(le.Uint32(p[12:]))
	if end > len(p) {
		return f, 0, false
	}
	// Offsets are from the message's start: alignment is to them.
	for i := fixedHeader; i < end; {
		// A field: its code, a variant's signature of one type, the value.
		if i+4 > end || p[i+1] != 1 || p[i+3] != 0 {
			return f, 0, false
		}
		code, typ := p[i], p[i+2]
		if typ != fieldType(code) {
			return f, 0, false // a code not defined, or a type godbus refuses
		}
		var val []byte
		var u uint32
		if val, u, i, ok = fieldValue(p, i+4, end, typ); !ok {
			return f, 0, false
		}
		switch code {
		case fieldReplySerial:
			f.replySerial = u
		case fieldPath:
			f.path = val
		case fieldInterface:
			f.iface = val
		case fieldMember:
			f.member = val
		case fieldSender:
			f.sender = val
		case fieldSignature:
			f.sig = val
		}
		if typ != 'u' && (!utf8.Valid(val) || bytes.IndexByte(val, 0) >= 0) {
			return f, 0, false // the specification's strings are UTF-8, without NUL
		}
		if i < end {
			// The array's length ends at its last field: bytes after
			// it are another field's.
			if i = align(i, 8); i >= end {
				return f, 0, false
			}
		}
	}
	return f, end, true
}

// fieldValue reads the value of type typ at i in p (a header whose fields
// end at end): a string's bytes, or a uint32; and where the next field may
// start.
func fieldValue(p []byte, i, end int, typ byte) (val []byte, u uint32, next int, ok bool) {
	le := binary.LittleEndian
	switch typ {
	case 's', 'o':
		i = align(i, 4)
		if i+4 > end {
			return nil, 0, 0, false
		}
		n := int64(le.Uint32(p[i:])) // int64: no overflow where int is 32 bits
		if n > int64(end-i-5) || p[i+4+int(n)] != 0 {
			return nil, 0, 0, false
		}
		return p[i+4 : i+4+int(n)], 0, i + 5 + int(n), true
	case 'g':
		if i >= end {
			return nil, 0, 0, false
		}
		n := int(p[i])
		if n > end-i-2 || p[i+1+n] != 0 {
			return nil, 0, 0, false
		}
		return p[i+1 : i+1+n], 0, i + 2 + n, true
	case 'u':
		i = align(i, 4)
		if i+4 > end {
			return nil, 0, 0, false
		}
		return nil, le.Uint32(p[i:]), i + 4, true
	}
	return nil, 0, 0, false
}

// fieldType returns the type the specification gives the header field
// code, or 0 for a code it does not define (left to godbus).
func fieldType(code byte) byte {
	switch code {
	case fieldPath:
		return 'o'
	case fieldInterface, fieldMember, fieldErrorName, fieldDestination, fieldSender:
		return 's'
	case fieldReplySerial, fieldUnixFDs:
		return 'u'
	case fieldSignature:
		return 'g'
	}
	return 0
}

// align rounds i up to a multiple of n (a power of 2).
func align(i, n int) int { return (i + n - 1) &^ (n - 1) }

// field is a header field for appendFrame: a string, object path or
// signature (s), or a uint32 (u), as typ says.
type field struct {
	code, typ byte
	s         string
	u         uint32
}

// appendFrame appends to p a little-endian message of type typ with flags, the header fields given,
// serial 0 (send sets it) and the body ay (one byte array), without
// godbus's encoder (reflection, and a map for the fields), for the
// messages that carry probes and replies.
func appendFrame(p []byte, typ, flags byte, fields []field, ay []byte) []byte {
	le := binary.LittleEndian
	base := len(p)
	pad := func(p []byte, n int) []byte {
		for (len(p)-base)%n != 0 {
			p = append(p, 0)
		}
		return p
	}
	p = append(p, 'l', typ, flags, 1)
	p = append(p, make([]byte, 12)...) // body length, serial, fields' length
	for _, f := range fields {
		p = pad(p, 8)
		p = append(p, f.code, 1, f.typ, 0)
		switch f.typ {
		case 's', 'o':
			p = pad(p, 4)
			p = le.AppendUint32(p, uint32(len(f.s)))
			p = append(append(p, f.s...), 0)
		case 'g':
			p = append(append(append(p, byte(len(f.s))), f.s...), 0)
		case 'u':
			p = pad(p, 4)
			p = le.AppendUint32(p, f.u)
		}
	}
	le.PutUint32(p[base+12:], uint32(len(p)-base-fixedHeader))
	p = pad(p, 8)
	le.PutUint32(p[base+4:], uint32(4+len(ay)))
	return append(le.AppendUint32(p, uint32(len(ay))), ay...)
}
