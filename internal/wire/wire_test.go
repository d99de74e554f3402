package wire

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"strings"
	"testing"
)

func mustHex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.Join(strings.Fields(s), ""))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// probeVector is a probe written out by hand from the package diagram.
const probeVector = `
564c 01 03 0001 0000
0102030405060708
000000000000002a
17f0a3b1c2d3e4f5
0000000000000000
0000000000000000
0000000000000000
00000100
000003e8`

func TestKnownAnswers(t *testing.T) {
	tests := []struct {
		name string
		hex  string
		want Header
	}{
		{"probe", probeVector, Header{
			Type: TypeProbe, Flags: FlagWarmup, Token: 0x0102030405060708, Seq: 42,
			T1: 0x17f0a3b1c2d3e4f5, ReplySize: 256, HoldMicro: 1000,
		}},
		{"reply", `
564c 01 04 0000 0000
fffffffffffffffe
ffffffffffffffff
0000000000000001
0000000000000002
0000000000000003
0000000000000064
00000000
00000000`, Header{
			Type: TypeReply, Token: 0xfffffffffffffffe, Seq: 1<<64 - 1,
			T1: 1, T2: 2, T3: 3, Received: 100,
		}},
		{"cookie with a clock identity", `
564c 01 02 0040 0000
0102030405060708
0000000000000007
0000000000000001
0000000000000002
8badf00d12345678
00000000000f4240
00000100
000003e8`, Header{
			Type: TypeCookie, Flags: FlagClockID, Token: 0x0102030405060708, Seq: 7,
			T1: 1, T2: 2, T3: -0x7452_0ff2_edcb_a988, RateLimit: 1_000_000, ReplySize: 256, HoldMicro: 1000,
		}},
		{"load, down", `
564c 01 08 0100 0000
0102030405060708
0000000000000003
0000000000000001
0000000000000000
0000000000000000
00000000cafef00d
00000000
004c4b40`, Header{
			Type: TypeLoad, Flags: FlagLoadDown, Token: 0x0102030405060708, Seq: 3,
			T1: 1, Nonce: 0xcafef00d, HoldMicro: 5_000_000,
		}},
		{"load-ack, signed", `
564c 01 09 0104 0000
0102030405060708
0000000000000003
0000000000000000
0000000000000009
0000000000000000
000000003b9aca00
00000000
004c4b40`, Header{
			Type: TypeLoadAck, Flags: FlagLoadDown | FlagAuth, Token: 0x0102030405060708, Seq: 3,
			T2: 9, RateLimit: 1_000_000_000, HoldMicro: 5_000_000,
		}},
		{"error, load streams", `
564c 01 07 0000 0000
0000000000000000
0000000000000003
0000000000000000
0000000000000000
0000000000000000
000000000000000c
00000000
00000000`, Header{Type: TypeError, Seq: 3, Code: ErrorLoadStreams}},
		{"negative time", `
564c 01 01 0000 0000
0000000000000000
0000000000000007
ffffffffffffffff
0000000000000000
0000000000000000
0000000000000000
00000000
00000000`, Header{Type: TypeHello, Seq: 7, T1: -1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := mustHex(t, tt.hex)
			var got Header
			if err := got.Decode(b); err != nil {
				t.Fatalf("Decode(%x) = %v, want nil", b, err)
			}
			if got != tt.want {
				t.Fatalf("Decode(%x) = %+v, want %+v", b, got, tt.want)
			}
			enc := make([]byte, HeaderLen)
			if err := tt.want.Encode(enc); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(enc, b) {
				t.Fatalf("Encode(%+v) = %x, want %x", tt.want, enc, b)
			}
		})
	}
}

func TestDecodeErrors(t *testing.T) {
	good := mustHex(t, probeVector)
	mod := func(i int, v byte) []byte {
		b := bytes.Clone(good)
		b[i] = v
		return b
	}
	tests := []struct {
		name string
		in   []byte
		want error
	}{
		{"empty", nil, ErrShort},
		{"one short", good[:HeaderLen-1], ErrShort},
		{"magic", mod(0, 'X'), ErrMagic},
		{"version", mod(2, 2), ErrVersion},
		{"type zero", mod(3, 0), ErrType},
		{"type too big", mod(3, 10), ErrType},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var h Header
			if err := h.Decode(tt.in); !errors.Is(err, tt.want) {
				t.Fatalf("Decode(%x) = %v, want %v", tt.in, err, tt.want)
			}
		})
	}
}

func TestEncodeKeepsPadding(t *testing.T) {
	b := bytes.Repeat([]byte{0xaa}, HeaderLen+8)
	h := Header{Type: TypeReply, Seq: 9}
	if err := h.Encode(b); err != nil {
		t.Fatal(err)
	}
	if got := b[HeaderLen:]; !bytes.Equal(got, bytes.Repeat([]byte{0xaa}, 8)) {
		t.Fatalf("padding after Encode = %x, want it untouched", got)
	}
	if err := h.Encode(b[:HeaderLen-1]); !errors.Is(err, ErrShort) {
		t.Fatalf("Encode(short) = %v, want %v", err, ErrShort)
	}
}

func TestTypeString(t *testing.T) {
	for ty, want := range map[Type]string{TypeHello: "hello", TypeCloseAck: "close-ack", TypeError: "error", TypeLoad: "load", TypeLoadAck: "load-ack", 0: "invalid", 10: "unknown", 200: "unknown"} {
		if got := ty.String(); got != want {
			t.Errorf("Type(%d).String() = %q, want %q", ty, got, want)
		}
	}
}

func FuzzDecode(f *testing.F) {
	seeds := []Header{
		{Type: TypeHello, Seq: 1},
		{Type: TypeCookie, Token: 77, Seq: 1, T2: 5, T3: 6},
		{Type: TypeCookie, Flags: FlagClockID, Token: 77, Seq: 1, T2: 5, T3: -0x7452_0ff2_edcb_a988},
		{Type: TypeProbe, Flags: FlagWarmup, Token: 77, Seq: 2, T1: 1e18, ReplySize: 1000, HoldMicro: 5},
		{Type: TypeReply, Token: 77, Seq: 2, T1: 1, T2: 2, T3: 3, Received: 1},
		{Type: TypeClose, Token: 77},
		{Type: TypeCloseAck, Token: 77, Received: 1 << 40},
		{Type: TypeLoad, Flags: FlagLoadDown, Token: 77, Nonce: 5, Seq: 1, T1: 1e18, HoldMicro: 5_000_000},
		{Type: TypeLoad, Token: 77, Nonce: 5, Seq: 64, HoldMicro: 1<<32 - 1},
		{Type: TypeLoadAck, Flags: FlagLoadDown | FlagAuth, Token: 77, Seq: 1, T2: 2, RateLimit: 1e9, HoldMicro: 300_000_000},
		{Type: TypeError, Seq: 1, Code: ErrorLoadStreams},
	}
	for _, h := range seeds {
		b := make([]byte, HeaderLen+16)
		if err := h.Encode(b); err != nil {
			f.Fatal(err)
		}
		f.Add(b)
		f.Add(b[:HeaderLen])
	}
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		var h Header
		if err := h.Decode(b); err != nil {
			return
		}
		enc := make([]byte, HeaderLen)
		if err := h.Encode(enc); err != nil {
			t.Fatalf("Encode(%+v) = %v", h, err)
		}
		var again Header
		if err := again.Decode(enc); err != nil {
			t.Fatalf("Decode(Encode(%+v)) = %v", h, err)
		}
		if again != h {
			t.Fatalf("Decode(Encode(h)) = %+v, want %+v", again, h)
		}
		// Everything but the reserved field survives the round trip byte
		// for byte, and the word at offset 48 where the type carries none
		// there (a Hello: it is read as zero, as the reserved field is).
		want := bytes.Clone(b[:HeaderLen])
		if h.Type == TypeHello {
			clear(want[48:56])
		}
		if !bytes.Equal(enc[:6], want[:6]) || !bytes.Equal(enc[8:], want[8:]) {
			t.Fatalf("Encode(Decode(%x)) = %x", b[:HeaderLen], enc)
		}
	})
}

func BenchmarkEncode(b *testing.B) {
	buf := make([]byte, HeaderLen)
	h := Header{Type: TypeProbe, Token: 1, Seq: 2, T1: 3}
	b.ReportAllocs()
	for b.Loop() {
		h.Seq++
		_ = h.Encode(buf)
	}
}

func BenchmarkDecode(b *testing.B) {
	buf := make([]byte, HeaderLen)
	in := Header{Type: TypeReply, Token: 1, Seq: 2, T1: 3, T2: 4, T3: 5, Received: 6}
	_ = in.Encode(buf)
	var h Header
	b.ReportAllocs()
	for b.Loop() {
		if err := h.Decode(buf); err != nil {
			b.Fatal(err)
		}
	}
}

func TestPutT3(t *testing.T) {
	b := make([]byte, HeaderLen)
	in := Header{Type: TypeReply, Seq: 3, T1: 1, T2: 2, T3: 3}
	_ = in.Encode(b)
	PutT3(b, 99)
	var h Header
	if err := h.Decode(b); err != nil || h.T3 != 99 || h.T2 != 2 || h.Received != 0 {
		t.Fatalf("after PutT3(99): %+v, %v; want T3 99 and the rest unchanged", h, err)
	}
}

func TestSigner(t *testing.T) {
	a, b := NewSigner([]byte("key one")), NewSigner([]byte("key two"))
	msg := make([]byte, HeaderLen+10+TagLen)
	_ = (&Header{Type: TypeProbe, Flags: FlagAuth, Seq: 1}).Encode(msg)
	a.Sign(msg)
	if err := a.Verify(msg); err != nil {
		t.Fatalf("Verify(Sign(msg)) = %v", err)
	}
	if err := b.Verify(msg); !errors.Is(err, ErrTag) {
		t.Fatalf("Verify with another key = %v, want ErrTag", err)
	}
	msg[20] ^= 1
	if err := a.Verify(msg); !errors.Is(err, ErrTag) {
		t.Fatalf("Verify after a flipped bit = %v, want ErrTag", err)
	}
	if err := a.Verify(msg[:HeaderLen]); !errors.Is(err, ErrTag) {
		t.Fatalf("Verify of a message with no room for a tag = %v, want ErrTag", err)
	}
	// The known answer: HMAC-SHA-256 of the header, truncated.
	m := hmac.New(sha256.New, []byte("key one"))
	msg[20] ^= 1
	m.Write(msg[:len(msg)-TagLen])
	if want := m.Sum(nil)[:TagLen]; !bytes.Equal(msg[len(msg)-TagLen:], want) {
		t.Fatalf("tag %x, want %x", msg[len(msg)-TagLen:], want)
	}
	if ErrorAuth.String() != "authentication failed" || ErrorCode(99).String() != "unknown error" ||
		ErrorLoad.String() != "the reflector serves no load (--allow-load)" || ErrorCode(13).String() != "unknown error" {
		t.Fatal("ErrorCode names")
	}
}

func BenchmarkSignVerify(b *testing.B) {
	s := NewSigner([]byte("key"))
	msg := make([]byte, HeaderLen+TagLen)
	b.ReportAllocs()
	for b.Loop() {
		s.Sign(msg)
		if s.Verify(msg) != nil {
			b.Fatal("verify")
		}
	}
}

func TestFlagsOf(t *testing.T) {
	b := make([]byte, HeaderLen)
	h := Header{Type: TypeProbe, Flags: FlagWarmup | FlagNoQuickAck}
	if err := h.Encode(b); err != nil {
		t.Fatal(err)
	}
	if got := FlagsOf(b); got != h.Flags {
		t.Fatalf("FlagsOf = %b, want %b", got, h.Flags)
	}
	if got := FlagsOf(b[:10]); got != 0 {
		t.Fatalf("FlagsOf(short) = %b, want 0", got)
	}
}

func TestStamps(t *testing.T) {
	b := make([]byte, HeaderLen+StampsLen)
	h := Header{Type: TypeReply, Flags: FlagStamps, Seq: 9}
	if err := h.Encode(b); err != nil {
		t.Fatal(err)
	}
	want := Stamps{T2K: 1_700_000_000_123456789, PrevSeq: 8, PrevT3K: -5}
	PutStamps(b, want)
	if got, ok := StampsOf(b); !ok || got != want {
		t.Errorf("StampsOf = %+v, %v; want %+v, true", got, ok, want)
	}
	if _, ok := StampsOf(b[:HeaderLen+StampsLen-1]); ok {
		t.Error("StampsOf read a block from a message too short for it")
	}
	h.Flags = 0
	_ = h.Encode(b)
	if _, ok := StampsOf(b); ok {
		t.Error("StampsOf read a block from a message without FlagStamps")
	}
}

func TestFollowUps(t *testing.T) {
	b := make([]byte, 2*FollowUpLen+5) // a cut third one is not read
	PutFollowUp(b, 7, 1_700_000_000_000_000_007)
	PutFollowUp(b[FollowUpLen:], 8, -1)
	var got []int64
	FollowUps(b, func(seq uint64, t3k int64) { got = append(got, int64(seq), t3k) })
	if len(got) != 4 || got[0] != 7 || got[1] != 1_700_000_000_000_000_007 || got[2] != 8 || got[3] != -1 {
		t.Errorf("FollowUps = %v", got)
	}
}

func TestClockIDOf(t *testing.T) {
	tests := []struct {
		h    Header
		want uint64
	}{
		{Header{Type: TypeCookie, Flags: FlagClockID, T3: 0x1234}, 0x1234},
		{Header{Type: TypeCookie, Flags: FlagClockID, T3: -1}, 1<<64 - 1},
		{Header{Type: TypeCookie, T3: 0x1234}, 0},               // a send time, as before the flag
		{Header{Type: TypeReply, Flags: FlagClockID, T3: 5}, 0}, // only a Cookie carries one
	}
	for _, tt := range tests {
		if got := ClockIDOf(&tt.h); got != tt.want {
			t.Errorf("ClockIDOf(%+v) = %#x, want %#x", tt.h, got, tt.want)
		}
	}
}

// TestWordByType checks that the word at offset 48 is read into the one
// field its type gives it, and that a field another type uses is neither
// written nor left over from an earlier decode.
func TestWordByType(t *testing.T) {
	tests := []struct {
		typ  Type
		want func(h *Header) uint64
	}{
		{TypeProbe, func(h *Header) uint64 { return h.Nonce }},
		{TypeClose, func(h *Header) uint64 { return h.Nonce }},
		{TypeReply, func(h *Header) uint64 { return h.Received }},
		{TypeCloseAck, func(h *Header) uint64 { return h.Received }},
		{TypeCookie, func(h *Header) uint64 { return h.RateLimit }},
		{TypeError, func(h *Header) uint64 { return uint64(h.Code) }},
		{TypeLoad, func(h *Header) uint64 { return h.Nonce }},
		{TypeLoadAck, func(h *Header) uint64 { return h.RateLimit }},
	}
	for _, tt := range tests {
		t.Run(tt.typ.String(), func(t *testing.T) {
			b := make([]byte, HeaderLen)
			b[3] = byte(tt.typ)
			copy(b, []byte{0x56, 0x4c, Version})
			b[55] = 42
			h := Header{Received: 7, Nonce: 7, RateLimit: 7, Code: 7}
			if err := h.Decode(b); err != nil {
				t.Fatal(err)
			}
			if got := tt.want(&h); got != 42 || h.Received+h.Nonce+h.RateLimit+uint64(h.Code) != 42 {
				t.Fatalf("Decode(%x) = %+v, want 42 in the %s field alone", b, h, tt.typ)
			}
			other := Header{Type: tt.typ, Received: 1, Nonce: 1, RateLimit: 1, Code: 1}
			switch tt.typ {
			case TypeProbe, TypeClose, TypeLoad:
				other.Nonce = 0
			case TypeReply, TypeCloseAck:
				other.Received = 0
			case TypeCookie, TypeLoadAck:
				other.RateLimit = 0
			case TypeError:
				other.Code = 0
			}
			_ = other.Encode(b)
			if w := binary.BigEndian.Uint64(b[48:]); w != 0 {
				t.Fatalf("Encode(%+v) wrote word %d, want 0: only the type's own field is sent", other, w)
			}
		})
	}
}

func TestSeal(t *testing.T) {
	s := NewSigner([]byte("key"))
	msg := make([]byte, HeaderLen+TagLen)
	h := Header{Type: TypeProbe, Token: 1, Seq: 2, Nonce: 3}
	h.Seal(msg, s)
	var got Header
	if err := got.Decode(msg); err != nil || got.Flags&FlagAuth == 0 || s.Verify(msg) != nil || got.Nonce != 3 {
		t.Fatalf("Seal with a key: %+v, %v, verify %v; want FlagAuth, a good tag and the header", got, err, s.Verify(msg))
	}
	plain := make([]byte, HeaderLen)
	h = Header{Type: TypeProbe, Token: 1, Seq: 2}
	h.Seal(plain, nil)
	if err := got.Decode(plain); err != nil || got.Flags&FlagAuth != 0 {
		t.Fatalf("Seal without a key: %+v, %v; want no FlagAuth", got, err)
	}
}

// TestHoldOf: the hold a probe asks for is read without decoding, and
// anything but a volley probe says it is none.
func TestHoldOf(t *testing.T) {
	enc := func(h Header) []byte {
		b := make([]byte, HeaderLen)
		if err := h.Encode(b); err != nil {
			t.Fatal(err)
		}
		return b
	}
	probe := enc(Header{Type: TypeProbe, Seq: 1, HoldMicro: 250})
	badMagic := append([]byte(nil), probe...)
	badMagic[0] ^= 0xff
	for _, c := range []struct {
		name  string
		msg   []byte
		hold  uint32
		probe bool
	}{
		{"probe", probe, 250, true},
		{"probe, no hold", enc(Header{Type: TypeProbe, Seq: 1}), 0, true},
		{"load", enc(Header{Type: TypeLoad, Seq: 1, HoldMicro: 250}), 0, false},
		{"not volley", badMagic, 0, false},
		{"short", probe[:HeaderLen-1], 0, false},
	} {
		if hold, ok := HoldOf(c.msg); hold != c.hold || ok != c.probe {
			t.Errorf("%s: HoldOf = %d, %v; want %d, %v", c.name, hold, ok, c.hold, c.probe)
		}
	}
}
