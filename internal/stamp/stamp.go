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
// All multi-byte fields are big-endian; MBZ fields are sent as zero and
// ignored on receipt. A Session-Sender packet in unauthenticated mode
// (RFC 8762 §4.2.1, with RFC 8972 §3's SSID), 44 bytes:
//
//	 0                   1                   2                   3
//	 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                        Sequence Number                        |  0
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                    Timestamp T1 (NTP 64 bits)                 |  4
//	|                                                               |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|        Error Estimate         |             SSID              | 12
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                         MBZ (28 octets)                       | 16
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//
// A Session-Reflector packet in unauthenticated mode (RFC 8762 §4.3.1), 44
// bytes, the same size as the sender's:
//
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|          Sequence Number (the reflector's or the sender's)    |  0
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                  Timestamp T3 (transmit, NTP)                 |  4
//	|                                                               |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|        Error Estimate         |             SSID              | 12
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                 Receive Timestamp T2 (NTP)                    | 16
//	|                                                               |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                 Session-Sender Sequence Number                | 24
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                  Session-Sender Timestamp T1                  | 28
//	|                                                               |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	| Session-Sender Error Estimate |              MBZ              | 36
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|Ses-Sender TTL |                     MBZ                       | 40
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//
// In authenticated mode (RFC 8762 §4.2.2, §4.3.2) both packets are 112
// bytes: the same fields, spread out by MBZ octets so that each starts on
// a 16-byte boundary, and a 16-byte HMAC at 96. Sender: Sequence Number 0,
// MBZ 4-15, T1 16, Error Estimate 24, SSID 26, MBZ 28-95, HMAC 96.
// Reflector: Sequence Number 0, MBZ 4-15, T3 16, Error Estimate 24, SSID
// 26, MBZ 28-31, T2 32, MBZ 40-47, Session-Sender Sequence Number 48, MBZ
// 52-63, Session-Sender Timestamp 64, Session-Sender Error Estimate 72,
// MBZ 74-79, Session-Sender TTL 80, MBZ 81-95, HMAC 96. The HMAC is
// HMAC-SHA-256 over bytes 0-95 with the shared key, truncated to 16 bytes.
//
// Bytes after the base packet are RFC 8972's TLVs (see TLV), or padding a
// sender that knows no TLVs added; the reflector's are the sender's,
// answered as RFC 8972 §4 says (Reflector.Reflect).
package stamp

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/binary"
	"errors"
)

// Port is STAMP's well-known UDP port (RFC 8762 §4.1).
const Port = 862

// The sizes of the packets without TLVs: both sides' packets are the same
// size in each mode (RFC 8762 §4.2, §4.3).
const (
	BaseLen     = 44  // unauthenticated mode
	AuthBaseLen = 112 // authenticated mode
)

// HMACLen is the length of the authenticated mode's HMAC field, and
// hmacAt its offset.
const (
	HMACLen = 16
	hmacAt  = AuthBaseLen - HMACLen
)

// Errors of decoding and reflecting. A caller counts them as the reasons
// it dropped a packet.
var (
	ErrShort = errors.New("stamp: packet shorter than its mode's base length")
	ErrAuth  = errors.New("stamp: HMAC does not match")
	// ErrBuffer is Put's error when b is shorter than the mode's base.
	ErrBuffer = errors.New("stamp: buffer shorter than the mode's base length")
)

// BaseLength returns the base packet's length in the mode of key: BaseLen
// without a key, AuthBaseLen with one.
func BaseLength(key []byte) int {
	if key == nil {
		return BaseLen
	}
	return AuthBaseLen
}

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

// The offsets of the fields, per mode.
type senderLayout struct{ t1, err, ssid int }
type reflectedLayout struct{ t3, err, ssid, t2, sseq, st1, serr, ttl int }

var (
	senderPlain = senderLayout{t1: 4, err: 12, ssid: 14}
	senderAuth  = senderLayout{t1: 16, err: 24, ssid: 26}
	reflPlain   = reflectedLayout{t3: 4, err: 12, ssid: 14, t2: 16, sseq: 24, st1: 28, serr: 36, ttl: 40}
	reflAuth    = reflectedLayout{t3: 16, err: 24, ssid: 26, t2: 32, sseq: 48, st1: 64, serr: 72, ttl: 80}
)

// SenderSSID returns the SSID of the Session-Sender packet b in the mode
// of key (nil: unauthenticated), without checking anything else; ok is
// false when b is shorter than the mode's base.
func SenderSSID(b []byte, key []byte) (ssid uint16, ok bool) {
	if len(b) < BaseLength(key) {
		return 0, false
	}
	l := senderPlain
	if key != nil {
		l = senderAuth
	}
	return binary.BigEndian.Uint16(b[l.ssid:]), true
}

// PutSender writes s into b's base packet (zeroing its MBZ octets) in the
// mode of key (nil: unauthenticated), with the HMAC in authenticated mode.
// Bytes of b after the base are left as they are (TLVs, padding); b must
// be at least the mode's base length.
func PutSender(b []byte, s *Sender, key []byte) error {
	n := BaseLength(key)
	if len(b) < n {
		return ErrBuffer
	}
	clear(b[:n])
	l := senderPlain
	if key != nil {
		l = senderAuth
	}
	be := binary.BigEndian
	be.PutUint32(b[0:], s.Seq)
	be.PutUint64(b[l.t1:], uint64(s.T1))
	be.PutUint16(b[l.err:], uint16(s.Err))
	be.PutUint16(b[l.ssid:], s.SSID)
	if key != nil {
		sum := MAC(key, b[:hmacAt])
		copy(b[hmacAt:AuthBaseLen], sum[:])
	}
	return nil
}

// ParseSender decodes the Session-Sender packet b in the mode of key,
// checking the HMAC in authenticated mode. It never allocates.
func ParseSender(b []byte, key []byte) (Sender, error) {
	if len(b) < BaseLength(key) {
		return Sender{}, ErrShort
	}
	l := senderPlain
	if key != nil {
		if !checkMAC(b, key) {
			return Sender{}, ErrAuth
		}
		l = senderAuth
	}
	be := binary.BigEndian
	return Sender{
		Seq:  be.Uint32(b[0:]),
		T1:   Time(be.Uint64(b[l.t1:])),
		Err:  ErrorEstimate(be.Uint16(b[l.err:])),
		SSID: be.Uint16(b[l.ssid:]),
	}, nil
}

// PutReflected writes r into b's base packet (zeroing its MBZ octets) in
// the mode of key, with the HMAC in authenticated mode. Bytes of b after
// the base are left as they are.
func PutReflected(b []byte, r *Reflected, key []byte) error {
	n := BaseLength(key)
	if len(b) < n {
		return ErrBuffer
	}
	clear(b[:n])
	l := reflPlain
	if key != nil {
		l = reflAuth
	}
	be := binary.BigEndian
	be.PutUint32(b[0:], r.Seq)
	be.PutUint64(b[l.t3:], uint64(r.T3))
	be.PutUint16(b[l.err:], uint16(r.Err))
	be.PutUint16(b[l.ssid:], r.SSID)
	be.PutUint64(b[l.t2:], uint64(r.T2))
	be.PutUint32(b[l.sseq:], r.SenderSeq)
	be.PutUint64(b[l.st1:], uint64(r.SenderT1))
	be.PutUint16(b[l.serr:], uint16(r.SenderErr))
	b[l.ttl] = r.SenderTTL
	if key != nil {
		sum := MAC(key, b[:hmacAt])
		copy(b[hmacAt:AuthBaseLen], sum[:])
	}
	return nil
}

// ParseReflected decodes the Session-Reflector packet b in the mode of
// key, checking the HMAC in authenticated mode. It never allocates.
func ParseReflected(b []byte, key []byte) (Reflected, error) {
	if len(b) < BaseLength(key) {
		return Reflected{}, ErrShort
	}
	l := reflPlain
	if key != nil {
		if !checkMAC(b, key) {
			return Reflected{}, ErrAuth
		}
		l = reflAuth
	}
	be := binary.BigEndian
	return Reflected{
		Seq:       be.Uint32(b[0:]),
		T3:        Time(be.Uint64(b[l.t3:])),
		Err:       ErrorEstimate(be.Uint16(b[l.err:])),
		SSID:      be.Uint16(b[l.ssid:]),
		T2:        Time(be.Uint64(b[l.t2:])),
		SenderSeq: be.Uint32(b[l.sseq:]),
		SenderT1:  Time(be.Uint64(b[l.st1:])),
		SenderErr: ErrorEstimate(be.Uint16(b[l.serr:])),
		SenderTTL: b[l.ttl],
	}, nil
}

// checkMAC reports whether the authenticated packet b (at least
// AuthBaseLen bytes) carries the HMAC of its first 96 bytes under key.
func checkMAC(b, key []byte) bool {
	sum := MAC(key, b[:hmacAt])
	return subtle.ConstantTimeCompare(sum[:], b[hmacAt:AuthBaseLen]) == 1
}

// MAC returns HMAC-SHA-256 (RFC 2104) of msg under key, truncated to
// HMACLen bytes (RFC 8762 §4.4). msg is at most 96 bytes (the part of a
// base packet the HMAC covers; a longer one is cut there): the sums are
// made in arrays on the stack, so that a packet is authenticated without
// allocating (crypto/hmac's New allocates its hashes).
func MAC(key, msg []byte) [HMACLen]byte {
	var k [sha256.BlockSize]byte
	if len(key) > sha256.BlockSize {
		h := sha256.Sum256(key)
		copy(k[:], h[:])
	} else {
		copy(k[:], key)
	}
	var in [sha256.BlockSize + hmacAt]byte
	for i, c := range k {
		in[i] = c ^ 0x36
	}
	m := copy(in[sha256.BlockSize:], msg)
	inner := sha256.Sum256(in[:sha256.BlockSize+m])
	var out [sha256.BlockSize + sha256.Size]byte
	for i, c := range k {
		out[i] = c ^ 0x5c
	}
	copy(out[sha256.BlockSize:], inner[:])
	sum := sha256.Sum256(out[:])
	var t [HMACLen]byte
	copy(t[:], sum[:])
	return t
}
