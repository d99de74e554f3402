// Package wire encodes and decodes volley's messages.
//
// Every message starts with the same 64-byte header; probes and replies may
// carry padding after it up to the size the user asked for. All multi-byte
// fields are big-endian.
//
//	 0                   1                   2                   3
//	 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|        Magic 0x564C "VL"      |    Version    |     Type      |  0
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|             Flags             |  TTL (Reply)  |TClass (Reply) |  4
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                     Session token (64 bits)                   |  8
//	|                                                               |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                    Sequence number (64 bits)                  | 16
//	|                                                               |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|           T1: client send time (int64 Unix nanoseconds)       | 24
//	|                                                               |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|          T2: reflector receive time (int64 Unix ns)           | 32
//	|                                                               |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|           T3: reflector send time (int64 Unix ns)             | 40
//	|                                                               |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|   Received, Nonce, RateLimit or Code: one per type (Header)   | 48
//	|                                                               |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|              Reply size asked for (bytes, uint32)             | 56
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|              Hold asked for (microseconds, uint32)            | 60
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                   Padding (any length, zeros)                 | 64
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//
// A session runs like this:
//
//	client                                   reflector
//	  Hello  (Seq = nonce)           ------>
//	                                 <------  Cookie (Token, Seq = nonce)
//	  Probe  (Token, Seq = 1, T1)    ------>
//	                                 <------  Reply (T1 echoed, T2, T3, Received)
//	  ...
//	  Close  (Token)                 ------>
//	                                 <------  CloseAck (Received = final count;
//	                                                    one-way: the results)
//
// A bulk stream of a latency-under-load run runs on a stream connection of
// its own:
//
//	client                                   reflector
//	  Hello  (Seq = nonce)           ------>
//	                                 <------  Cookie (Token, Seq = nonce)
//	  Load   (Token, Nonce, Seq = stream,
//	          T1, Hold = duration µs,
//	          FlagLoadDown: down)    ------>
//	                                 <------  LoadAck (Token, Seq, T2,
//	                                                   Hold = duration granted,
//	                                                   RateLimit = bits/s)
//	  raw bytes, no framing, one way ======>  (up)   or   <====== (down)
//	  until the granted duration ends (the reflector closes) or the client closes
//
// The Cookie's token is a keyed hash of the client's address that the
// reflector can check without keeping any state, so a reflector keeps no
// session until the client has shown it receives at its source address. A
// Cookie is never larger than the Hello it answers.
//
// Reply size and hold mean, by type:
//
//   - Hello: the largest reply size and hold the client will ask for.
//   - Cookie: what the reflector grants of those, within its limits;
//     RateLimit carries its rate limit per session in probes/s (0: none). With
//     FlagClockID, T3 carries the identity of the reflector's clock instead
//     of its send time (see FlagClockID).
//   - Probe: what this probe asks for (reply size 0: the probe's own size);
//     Nonce carries the Hello's nonce, which the cookie was made with, so a
//     stateless reflector can check the token (Close too).
//   - Reply: what the reflector applied to this probe.
//   - Load: Hold is the duration the stream asks for, in microseconds;
//     Nonce as a Probe's. Reply size is not used.
//   - LoadAck: Hold is the duration granted (at most the one asked, and
//     the reflector's longest); RateLimit the most the reflector sends in
//     all, over all its download streams, in bits/s (0: no cap).
//
// # Load
//
// A TypeLoad is valid only on a stream connection (TCP or Unix stream),
// after the Hello and Cookie of that same connection; its token is checked
// as a probe's, statelessly, and FlagAuth and the tag as any message's. A
// reflector that serves no load answers TypeError with ErrorLoad; one with
// as many load streams as it takes, in all or from the client's source,
// answers ErrorLoadStreams. A TypeLoad over a datagram transport or a
// bus, with a wrong token, or asking for no time, gets no answer. After
// the LoadAck the connection carries no more messages: the side that
// sends (the reflector with FlagLoadDown, the client without) writes raw
// bytes, the other reads and discards them, until the granted duration
// ends and the reflector closes, or the client closes first. The LoadAck
// echoes FlagLoadDown, and is signed when the reflector has a key.
//
// # One-way results
//
// The CloseAck of a session that sent one-way probes (FlagOneWay) carries
// the reflector's results after its header (and before the tag):
// OneWayResults, in a block of OneWayFixedLen bytes and one or two
// distributions (Snapshot) after it. Length is that of the whole block,
// distributions included; bit 0 of Flags says the IPDV distribution
// follows the delays' (a CloseAck with no room for it leaves it out), bit
// 1 that each distribution ends with a histogram of its values below zero
// (set only when one has such values), and its other bits are sent as zero
// and ignored. A block whose lengths
// disagree (a histogram past Length, bytes left over) is refused whole.
//
//	 0                   1                   2                   3
//	 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|        Magic 0x4F57 "OW"      |  Version (1)  |Flags: 1 IPDV, |  0
//	|                               |               |  2 below zero |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|               Length of the block (bytes, uint32)             |  4
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                 Received (probes, uint64)                     |  8
//	|                                                               |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                 Duplicates (probes, uint64)                   | 16
//	|                                                               |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                 Reordered (probes, uint64)                    | 24
//	|                                                               |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|          Delay: one-way delays (distribution, below)          | 32
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|       IPDV (distribution, below), when Flags has bit 0        |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//
// A distribution is SnapshotFixedLen bytes and its histogram (nanosecond
// values; offsets from the distribution's start):
//
//	 0  Count   int64    values recorded
//	 8  Mean    float64  their mean (IEEE 754 bits)
//	16  M2      float64  sum of squared deviations from the mean (Welford)
//	24  Min     int64    smallest value
//	32  Max     int64    largest value
//	40  HistLen uint32   length of the histogram
//	44  Histogram        HistLen bytes: HDR histogram, V2 compressed, base64 text
//	                     of the values from zero up
//	    BelowLen uint32  when Flags has bit 1: length of the histogram below zero
//	    Below            BelowLen bytes: the same, of the values below zero negated
//
// Reflectors before this layout sent the results as JSON, which starts
// with '{' (0x7B) where this block has its magic, under the same header
// Version: a client of this layout decodes a JSON block as ErrMagic, and a
// client before it fails to parse this block as JSON; either way the
// one-way run ends with no results from the reflector, not wrong ones.
//
// Decoding never allocates and never panics, whatever the input.
package wire

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/binary"
	"errors"
	"hash"
)

// HeaderLen is the size of the header every message starts with, and so the
// smallest message volley sends.
const HeaderLen = 64

// Magic identifies a volley message: the bytes "VL".
const Magic uint16 = 0x564C

// Version is the version of the format described in the package comment.
const Version uint8 = 1

// Type says what a message is.
type Type uint8

// The message types.
const (
	TypeHello    Type = 1 // client asks for a session
	TypeCookie   Type = 2 // reflector answers a Hello with a session token
	TypeProbe    Type = 3 // client probe
	TypeReply    Type = 4 // reflector reply to a probe
	TypeClose    Type = 5 // client ends the session
	TypeCloseAck Type = 6 // reflector confirms with its final count
	TypeError    Type = 7 // reflector refuses a Hello, or ends a session; Code says why
	// TypeLoad asks, on a stream connection whose handshake is done, for
	// a bulk stream (see Load in the package comment).
	TypeLoad Type = 8
	// TypeLoadAck grants a bulk stream: the duration, the rate cap.
	TypeLoadAck Type = 9
)

// ErrorCode says why a reflector refused a client, in a TypeError's Code.
type ErrorCode uint64

// The error codes.
const (
	ErrorAuth     ErrorCode = 1 // the message's tag was missing or wrong
	ErrorRefused  ErrorCode = 2 // the client's address is not allowed
	ErrorSessions ErrorCode = 3 // the reflector has as many sessions as it takes
	ErrorDuration ErrorCode = 4 // the session reached the reflector's longest
	// ErrorSession answers a probe whose session the reflector does not
	// know: it restarted, or forgot the session after its idle timeout.
	// Token and Seq are the probe's, so only the session's client can take
	// it for its own.
	ErrorSession ErrorCode = 5
	// ErrorConns refuses a stream connection beyond the reflector's most,
	// and ErrorSourceConns one beyond its most from one source.
	ErrorConns       ErrorCode = 6
	ErrorSourceConns ErrorCode = 7
	// ErrorSourceSessions refuses a Hello from a source that has as many
	// sessions as the reflector gives one source.
	ErrorSourceSessions ErrorCode = 8
	// ErrorMemory refuses a probe whose reply the reflector's memory
	// budget cannot hold now.
	ErrorMemory ErrorCode = 9
	// ErrorNoKey refuses a signed Hello at a reflector that has no key:
	// its replies would carry no tag, and the client would take none of
	// them.
	ErrorNoKey ErrorCode = 10
	// ErrorLoad refuses a TypeLoad at a reflector that serves no load
	// (or not on this transport).
	ErrorLoad ErrorCode = 11
	// ErrorLoadStreams refuses a TypeLoad beyond the reflector's most
	// load streams, in all or from one source.
	ErrorLoadStreams ErrorCode = 12
)

var errorNames = [...]string{"", "authentication failed", "address not allowed", "too many sessions",
	"session reached the reflector's longest duration", "session unknown to the reflector (it restarted, or the session idled out)",
	"too many connections", "too many connections from your address", "too many sessions from your address",
	"the reflector's memory budget cannot hold the reply asked for now (--max-memory)",
	"the reflector has no key", "the reflector serves no load (--allow-load)",
	"too many load streams, in all or from your address"}

// String says what the code means.
func (c ErrorCode) String() string {
	if c < ErrorCode(len(errorNames)) && c > 0 {
		return errorNames[c]
	}
	return "unknown error"
}

var typeNames = [...]string{"invalid", "hello", "cookie", "probe", "reply", "close", "close-ack", "error", "load", "load-ack"}

// String returns the lowercase name of t.
func (t Type) String() string {
	if int(t) < len(typeNames) {
		return typeNames[t]
	}
	return "unknown"
}

// Flags modify a message.
type Flags uint16

// The flags.
const (
	// FlagWarmup marks a warm-up probe: the reflector reflects it but does
	// not count it, so counts cover only measured probes.
	FlagWarmup Flags = 1 << 0
	// FlagOneWay marks a one-way probe: the reflector does not reply, but
	// measures its one-way delay (T1 to its receive time), and returns its
	// results in the payload of the session's CloseAck (OneWayResults).
	//
	// On a Close, it says that Seq is the number of measured one-way
	// probes the client sent, and asks the reflector to wait for those
	// the Close overtook on the way: a reflector that has received fewer
	// does not answer, and sends the CloseAck as soon as the last of them
	// comes (in answer to that probe), or answers the client's next Close,
	// which has no FlagOneWay (the client sends it after waiting its
	// timeout). A reflector on a stream, which keeps order, answers at
	// once.
	FlagOneWay Flags = 1 << 1
	// FlagAuth marks a message that ends with a TagLen-byte tag: the first
	// bytes of HMAC-SHA-256, keyed with the shared key, over everything
	// before the tag. With a key set, both ends drop messages without a
	// valid tag; a reflector answers such a Hello with ErrorAuth.
	FlagAuth Flags = 1 << 2
	// FlagNoQuickAck asks a reflector on a TCP connection not to set
	// TCP_QUICKACK after reading this message, so that its kernel delays
	// the ACK (iperf 2's --bounceback-no-quickack).
	FlagNoQuickAck Flags = 1 << 3
	// FlagStamps on a probe asks the reflector for its kernel (or
	// hardware) stamps; on a reply it says the Stamps block follows the
	// header. See Stamps.
	FlagStamps Flags = 1 << 4
	// FlagReordered on a reply says the reflector received its probe
	// after a probe of the session with a higher sequence number: the
	// probe was reordered on the way up. A reflector clears it on
	// every other reply; it means nothing on other messages.
	FlagReordered Flags = 1 << 5
	// FlagClockID on a Cookie says its T3 is the identity of the
	// reflector's clock, not a time: a number that a clock on the same
	// host and boot, without a wall-clock step between the two, has too
	// (see package clock). A client whose clock has the same identity
	// reads the same time as the reflector: its up and down delays are
	// measured, with no offset to estimate. A reflector that cannot tell
	// its clock's identity sends the Cookie without the flag, as
	// reflectors before it did; clients before it ignore it.
	FlagClockID Flags = 1 << 6
	// FlagPath on a probe asks the reflector what the probe's IP header
	// said when it arrived; on a reply it says the header's TTL and TClass
	// carry it (bytes 6 and 7, reserved in other messages): the TTL (IPv4)
	// or hop limit (IPv6), and the traffic class byte (DSCP in its upper
	// six bits, ECN in its lower two). A reflector whose socket cannot
	// tell sends the reply without the flag; reflectors before it ignore
	// the flag, and clients before it the bytes.
	FlagPath Flags = 1 << 7
	// FlagLoadDown on a TypeLoad (and its TypeLoadAck) says the
	// reflector sends the stream's bytes; without it the client sends.
	FlagLoadDown Flags = 1 << 8
)

// ClockIDOf returns the clock identity a Cookie carries (see FlagClockID),
// 0 when h is not a Cookie or carries none.
func ClockIDOf(h *Header) uint64 {
	if h.Type != TypeCookie || h.Flags&FlagClockID == 0 {
		return 0
	}
	return uint64(h.T3)
}

// StampsLen is the length of the Stamps block.
const StampsLen = 24

// Stamps is the block a reply carries right after its header when it has
// FlagStamps: the reflector's kernel (or hardware) stamps, which the
// header's user-space T2 and T3 leave out.
//
//	 0: T2K, the kernel's receive time of this probe (int64 Unix ns, 0: none)
//	 8: PrevSeq, the sequence number of the session's last reply whose
//	    transmit stamp the reflector has read (0: none yet)
//	16: PrevT3K, that reply's kernel transmit time (int64 Unix ns)
//
// The transmit time of a reply is known only once it has left, so it
// rides on a later reply of the session, as PTP's follow-up messages do.
// A reflector writes the block only when the probe asked for it and the
// reply has room for it (a reply size of at least HeaderLen+StampsLen).
type Stamps struct {
	T2K     int64
	PrevSeq uint64
	PrevT3K int64
}

// PutStamps writes s after the header of the message b, which must be at
// least HeaderLen+StampsLen long.
func PutStamps(b []byte, s Stamps) {
	binary.BigEndian.PutUint64(b[HeaderLen:], uint64(s.T2K))
	binary.BigEndian.PutUint64(b[HeaderLen+8:], s.PrevSeq)
	binary.BigEndian.PutUint64(b[HeaderLen+16:], uint64(s.PrevT3K))
}

// A CloseAck is never larger than the Close it answers, so that a replayed
// Close amplifies nothing: a client pads its Close to make room for what
// the CloseAck is to carry, CloseStampsLen for the follow-ups still owed
// (at most 64), CloseOneWayLen for a one-way session's results (which a
// CloseAck leaves out when they do not fit).
const (
	CloseStampsLen = HeaderLen + 64*FollowUpLen
	CloseOneWayLen = 16 << 10
)

// FollowUpLen is the length of a follow-up in a CloseAck with FlagStamps:
// the sequence number of a reply (uint64) and its kernel transmit time
// (int64 Unix ns). A session's last replies have no later reply to carry
// their T3K, so the CloseAck carries what is left of them, oldest first,
// after the header (when the Close asked with FlagStamps).
const FollowUpLen = 16

// PutFollowUp writes a follow-up into b[:FollowUpLen].
func PutFollowUp(b []byte, seq uint64, t3k int64) {
	binary.BigEndian.PutUint64(b, seq)
	binary.BigEndian.PutUint64(b[8:], uint64(t3k))
}

// FollowUps calls f with each whole follow-up in p, a CloseAck's bytes
// between its header and its tag.
func FollowUps(p []byte, f func(seq uint64, t3k int64)) {
	for ; len(p) >= FollowUpLen; p = p[FollowUpLen:] {
		f(binary.BigEndian.Uint64(p), int64(binary.BigEndian.Uint64(p[8:])))
	}
}

// StampsOf reads the Stamps block of the message b; ok is false when b
// has no FlagStamps or is too short to hold the block.
func StampsOf(b []byte) (s Stamps, ok bool) {
	if len(b) < HeaderLen+StampsLen || FlagsOf(b)&FlagStamps == 0 {
		return Stamps{}, false
	}
	return Stamps{
		T2K:     int64(binary.BigEndian.Uint64(b[HeaderLen:])),
		PrevSeq: binary.BigEndian.Uint64(b[HeaderLen+8:]),
		PrevT3K: int64(binary.BigEndian.Uint64(b[HeaderLen+16:])),
	}, true
}

// TagLen is the length of an authentication tag.
const TagLen = 16

// ErrTag says a message's authentication tag is missing or wrong.
var ErrTag = errors.New("wire: bad authentication tag")

// Signer signs and checks messages with one key. It is not safe for
// concurrent use, and it does not allocate per message.
type Signer struct {
	mac hash.Hash
	sum [sha256.Size]byte
}

// NewSigner returns a Signer for key.
func NewSigner(key []byte) *Signer { return &Signer{mac: hmac.New(sha256.New, key)} }

// Sign writes the tag of msg[:len(msg)-TagLen] into its last TagLen bytes.
func (s *Signer) Sign(msg []byte) {
	n := len(msg) - TagLen
	s.mac.Reset()
	s.mac.Write(msg[:n])
	copy(msg[n:], s.mac.Sum(s.sum[:0]))
}

// Seal writes h into msg and, when s is not nil, sets FlagAuth first and
// signs msg: the tag takes its last TagLen bytes. msg must hold a header.
// Every sender of a signed message seals it here, so the flag, the header
// and the tag cannot disagree.
func (h *Header) Seal(msg []byte, s *Signer) {
	if s != nil {
		h.Flags |= FlagAuth
	}
	_ = h.Encode(msg)
	if s != nil {
		s.Sign(msg)
	}
}

// Verify checks the tag at the end of msg and returns ErrTag if it is
// missing or wrong.
func (s *Signer) Verify(msg []byte) error {
	n := len(msg) - TagLen
	if n < HeaderLen {
		return ErrTag
	}
	s.mac.Reset()
	s.mac.Write(msg[:n])
	if subtle.ConstantTimeCompare(s.mac.Sum(s.sum[:0])[:TagLen], msg[n:]) != 1 {
		return ErrTag
	}
	return nil
}

// The decoder's errors.
var (
	ErrShort   = errors.New("wire: short packet")
	ErrMagic   = errors.New("wire: bad magic")
	ErrVersion = errors.New("wire: unsupported version")
	ErrType    = errors.New("wire: unknown message type")
)

// Header is the fixed part of every message. Times are Unix nanoseconds.
type Header struct {
	Type  Type
	Flags Flags
	Token uint64
	Seq   uint64
	T1    int64
	T2    int64
	T3    int64
	// The 64 bits at offset 48 mean one thing per type, and each meaning
	// has its field: Encode writes the one the type uses, Decode fills it
	// and zeroes the others.
	Received  uint64    // Reply, CloseAck: probes the reflector received in the session
	Nonce     uint64    // Probe, Close, Load: the Hello's nonce, which the token was made with
	RateLimit uint64    // Cookie: the session's rate limit in probes/s; LoadAck: the reflector's send cap in bits/s (0: none)
	Code      ErrorCode // Error: why the reflector refused or ended the session
	ReplySize uint32
	HoldMicro uint32
	// TTL and TClass are a Reply's bytes 6 and 7 when it has FlagPath:
	// the probe's TTL or hop limit, and its traffic class byte, as the
	// reflector received them. Encode and Decode move them for a Reply
	// only (bytes 6 and 7 are zero in other messages).
	TTL, TClass uint8
}

// word returns the field that h's type carries at offset 48.
func (h *Header) word() uint64 {
	switch h.Type {
	case TypeProbe, TypeClose, TypeLoad:
		return h.Nonce
	case TypeReply, TypeCloseAck:
		return h.Received
	case TypeCookie, TypeLoadAck:
		return h.RateLimit
	case TypeError:
		return uint64(h.Code)
	}
	return 0
}

// setWord fills the field that h's type carries at offset 48 with w, and
// zeroes the others.
func (h *Header) setWord(w uint64) {
	h.Received, h.Nonce, h.RateLimit, h.Code = 0, 0, 0, 0
	switch h.Type {
	case TypeProbe, TypeClose, TypeLoad:
		h.Nonce = w
	case TypeReply, TypeCloseAck:
		h.Received = w
	case TypeCookie, TypeLoadAck:
		h.RateLimit = w
	case TypeError:
		h.Code = ErrorCode(w)
	}
}

// Encode writes h into the first HeaderLen bytes of b. It returns ErrShort
// when b is smaller than HeaderLen; the rest of b is left as it is.
func (h *Header) Encode(b []byte) error {
	if len(b) < HeaderLen {
		return ErrShort
	}
	b = b[:HeaderLen]
	binary.BigEndian.PutUint16(b[0:], Magic)
	b[2] = Version
	b[3] = byte(h.Type)
	binary.BigEndian.PutUint16(b[4:], uint16(h.Flags))
	b[6], b[7] = 0, 0
	if h.Type == TypeReply {
		b[6], b[7] = h.TTL, h.TClass
	}
	binary.BigEndian.PutUint64(b[8:], h.Token)
	binary.BigEndian.PutUint64(b[16:], h.Seq)
	binary.BigEndian.PutUint64(b[24:], uint64(h.T1))
	binary.BigEndian.PutUint64(b[32:], uint64(h.T2))
	binary.BigEndian.PutUint64(b[40:], uint64(h.T3))
	binary.BigEndian.PutUint64(b[48:], h.word())
	binary.BigEndian.PutUint32(b[56:], h.ReplySize)
	binary.BigEndian.PutUint32(b[60:], h.HoldMicro)
	return nil
}

// PutT3 overwrites the T3 field of the encoded message b, for a reply whose
// send time is known only when it leaves. b must hold a header.
func PutT3(b []byte, t3 int64) {
	binary.BigEndian.PutUint64(b[40:48], uint64(t3))
}

// Decode reads a message's header from b. It checks the length, magic,
// version and type, in that order, and returns the first error found.
// Bytes 6 and 7 go to a Reply's TTL and TClass; other types ignore them.
func (h *Header) Decode(b []byte) error {
	if len(b) < HeaderLen {
		return ErrShort
	}
	b = b[:HeaderLen]
	if binary.BigEndian.Uint16(b[0:]) != Magic {
		return ErrMagic
	}
	if b[2] != Version {
		return ErrVersion
	}
	t := Type(b[3])
	if t < TypeHello || t > TypeLoadAck {
		return ErrType
	}
	h.Type = t
	h.Flags = Flags(binary.BigEndian.Uint16(b[4:]))
	h.TTL, h.TClass = 0, 0
	if t == TypeReply {
		h.TTL, h.TClass = b[6], b[7]
	}
	h.Token = binary.BigEndian.Uint64(b[8:])
	h.Seq = binary.BigEndian.Uint64(b[16:])
	h.T1 = int64(binary.BigEndian.Uint64(b[24:]))
	h.T2 = int64(binary.BigEndian.Uint64(b[32:]))
	h.T3 = int64(binary.BigEndian.Uint64(b[40:]))
	h.setWord(binary.BigEndian.Uint64(b[48:]))
	h.ReplySize = binary.BigEndian.Uint32(b[56:])
	h.HoldMicro = binary.BigEndian.Uint32(b[60:])
	return nil
}
