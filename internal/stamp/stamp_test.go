package stamp

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"math"
	"net/netip"
	"strings"
	"testing"
)

// The captured exchange of ../shared/interop/stamp-rfc8762-capture.md,
// as it is written there. Its sender payload is 43 bytes, although the
// file says 44 and "bytes 14-43 must be zero": one zero byte was lost in
// the writing (TestCaptureAsWritten). captureSender is the 44 bytes the
// file describes.
const (
	captureSenderHex = "00000000 eeb6ff27 66699b7e 0001 0000000000000000000000000000000000000000000000000000000000"
	captureReplyHex  = "00000000 eeb6ff27 668201d2 0001 0000 eeb6ff27 666c13b1 00000000 eeb6ff27 66699b7e 0001 0000 ff 000000"
)

func unhex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.ReplaceAll(s, " ", ""))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func captureSender(t testing.TB) []byte {
	b := unhex(t, captureSenderHex)
	return append(b, make([]byte, BaseLen-len(b))...)
}

func TestCaptureAsWritten(t *testing.T) {
	b := unhex(t, captureSenderHex)
	if len(b) != BaseLen-1 {
		t.Fatalf("captured sender payload is %d bytes; this test documents it as %d", len(b), BaseLen-1)
	}
	if _, err := ParseSender(b, nil); !errors.Is(err, ErrShort) {
		t.Errorf("ParseSender(43 bytes) error = %v, want ErrShort", err)
	}
	if r := unhex(t, captureReplyHex); len(r) != BaseLen {
		t.Errorf("captured reply is %d bytes, want %d", len(r), BaseLen)
	}
}

func TestCaptureSender(t *testing.T) {
	b := captureSender(t)
	s, err := ParseSender(b, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := Sender{Seq: 0, T1: 0xeeb6ff27_66699b7e, Err: 0x0001, SSID: 0}
	if s != want {
		t.Fatalf("ParseSender(%x) = %+v, want %+v", b, s, want)
	}
	if s.Err.Synchronized() || s.Err.PTP() || s.Err.Scale() != 0 || s.Err.Multiplier() != 1 {
		t.Errorf("error estimate %#04x: S=%v Z=%v scale %d multiplier %d, want 0 0 0 1",
			uint16(s.Err), s.Err.Synchronized(), s.Err.PTP(), s.Err.Scale(), s.Err.Multiplier())
	}
	enc := make([]byte, BaseLen)
	for i := range enc {
		enc[i] = 0xaa // Put must clear the MBZ octets
	}
	if err := PutSender(enc, &s, nil); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(enc, b) {
		t.Fatalf("PutSender(%+v) = %x, want %x", s, enc, b)
	}
}

func TestCaptureReply(t *testing.T) {
	want := unhex(t, captureReplyHex)
	r, err := ParseReflected(want, nil)
	if err != nil {
		t.Fatal(err)
	}
	fields := Reflected{Seq: 0, T3: 0xeeb6ff27_668201d2, Err: 1, SSID: 0, T2: 0xeeb6ff27_666c13b1,
		SenderSeq: 0, SenderT1: 0xeeb6ff27_66699b7e, SenderErr: 1, SenderTTL: 0xff}
	if r != fields {
		t.Fatalf("ParseReflected(%x) = %+v, want %+v", want, r, fields)
	}
	enc := make([]byte, BaseLen)
	if err := PutReflected(enc, &r, nil); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(enc, want) {
		t.Fatalf("PutReflected(%+v) = %x, want %x", r, enc, want)
	}
	if !(r.SenderT1 <= r.T2 && r.T2 <= r.T3) {
		t.Errorf("T1 %x, T2 %x, T3 %x out of order", r.SenderT1, r.T2, r.T3)
	}

	// The stateless reflector's reply to the captured request, given the
	// captured receive and transmit times and TTL, is the captured reply.
	b := captureSender(t)
	ref := NewReflector(ReflectorConfig{Err: NewErrorEstimate(false, 0)})
	from := netip.MustParseAddrPort("127.0.0.1:40000")
	m, err := ref.Reflect(b, len(b), from, r.T2.UnixNano(), r.T3.UnixNano(), 0xff)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b[:m], want) {
		t.Fatalf("Reflect(capture) = %x, want %x", b[:m], want)
	}
}

func TestTimeRoundTrip(t *testing.T) {
	for _, ntp := range []Time{0xeeb6ff27_66699b7e, 0xeeb6ff27_666c13b1, 0xeeb6ff27_668201d2} {
		ns := ntp.UnixNano()
		if got := FromUnixNano(ns); got != ntp {
			t.Errorf("FromUnixNano(%d) = %#x, want %#x (the capture's stamp)", ns, got, ntp)
		}
	}
	// 0xeeb6ff27 s after 1900 is 1795981479 s after 1970.
	if got, want := Time(0xeeb6ff27_00000000).UnixNano(), int64(1795981479)*1e9; got != want {
		t.Errorf("UnixNano(eeb6ff27.0) = %d, want %d", got, want)
	}
	for _, ns := range []int64{0, 1, 999_999_999, 1_000_000_000, -1, -1_000_000_001,
		1_795_981_479_400_048_941, 2_085_978_495_999_999_999, 2_085_978_496_000_000_000, // 2036's wrap
		4_294_967_295_999_999_999 - 2_208_988_800_000_000_000} {
		if got := FromUnixNano(ns).UnixNano(); got != ns {
			t.Errorf("FromUnixNano(%d).UnixNano() = %d", ns, got)
		}
	}
	if got := Time(0xffffffff_ffffffff).UnixNano(); got != (1<<32-ntpUnix)*nsPerSec {
		t.Errorf("UnixNano(ffffffff.ffffffff) = %d, want the next second, %d", got, int64(1<<32-ntpUnix)*nsPerSec)
	}
	if got, want := Time(5<<32|7).PTPUnixNano(), int64(5_000_000_007); got != want {
		t.Errorf("PTPUnixNano(5.7) = %d, want %d", got, want)
	}
}

func TestErrorEstimate(t *testing.T) {
	for _, c := range []struct {
		sync   bool
		ns     int64
		want   ErrorEstimate
		wantNs int64
	}{
		{false, 0, 0x0001, 1},
		{true, -5, 0x8001, 1},
		{false, 1, 0x0005, 2},                         // 4.29 units: 5 × 2^-32 s
		{false, 59, 0x00fe, 60},                       // 253.4 units: 254
		{false, 60, 0x0181, 61},                       // 257.7 units: scale 1, 129
		{true, 1_000_000, 0x8f84, 1_007_081},          // 132 × 2^(15-32) s
		{false, math.MaxInt64, 0x3a8a, math.MaxInt64}, // 138 × 2^26 s, saturated
	} {
		e := NewErrorEstimate(c.sync, c.ns)
		if e != c.want {
			t.Errorf("NewErrorEstimate(%v, %d) = %#04x, want %#04x", c.sync, c.ns, uint16(e), uint16(c.want))
		}
		if e.Synchronized() != c.sync || e.PTP() {
			t.Errorf("NewErrorEstimate(%v, %d): S=%v Z=%v", c.sync, c.ns, e.Synchronized(), e.PTP())
		}
		if got := e.Nanoseconds(); got < c.ns || got < c.wantNs-1 || got > c.wantNs {
			t.Errorf("NewErrorEstimate(%v, %d).Nanoseconds() = %d, want %d (and not below %d)", c.sync, c.ns, got, c.wantNs, c.ns)
		}
	}
	if got := ErrorEstimate(0xffff).Nanoseconds(); got != math.MaxInt64 {
		t.Errorf("ErrorEstimate(0xffff).Nanoseconds() = %d, want it saturated", got)
	}
	// Every estimate with scale < 40 gives an error that round-trips to
	// itself: NewErrorEstimate picks the smallest, so none is understated.
	for s := range 40 {
		for m := 1; m < 256; m++ {
			e := ErrorEstimate(s<<8 | m)
			ns := e.Nanoseconds()
			if back := NewErrorEstimate(false, ns); back.Nanoseconds() < ns {
				t.Fatalf("NewErrorEstimate(%d) = %#04x, %d ns: below %#04x's", ns, uint16(back), back.Nanoseconds(), uint16(e))
			}
		}
	}
}

func TestMACMatchesCryptoHMAC(t *testing.T) {
	msg := bytes.Repeat([]byte{0x5a, 0x01, 0xfe}, 32)[:hmacAt]
	for _, key := range [][]byte{{}, []byte("k"), bytes.Repeat([]byte{7}, 64), bytes.Repeat([]byte{9}, 65), bytes.Repeat([]byte{3}, 200)} {
		h := hmac.New(sha256.New, key)
		h.Write(msg)
		want := h.Sum(nil)[:HMACLen]
		if got := MAC(key, msg); !bytes.Equal(got[:], want) {
			t.Errorf("MAC(key of %d bytes) = %x, want %x", len(key), got, want)
		}
	}
}

func TestAuthenticated(t *testing.T) {
	key := []byte("a shared STAMP key")
	s := Sender{Seq: 0x01020304, T1: FromUnixNano(1_795_981_479_400_048_941), Err: NewErrorEstimate(true, 1000), SSID: 0xbeef}
	b := make([]byte, AuthBaseLen+8)
	if err := PutSender(b[:AuthBaseLen-1], &s, key); !errors.Is(err, ErrBuffer) {
		t.Errorf("PutSender(111 bytes) error = %v, want ErrBuffer", err)
	}
	if err := PutSender(b, &s, key); err != nil {
		t.Fatal(err)
	}
	if got := b[16:24]; !bytes.Equal(got, []byte{0xee, 0xb6, 0xff, 0x27, 0x66, 0x69, 0x9b, 0x7e}) {
		t.Errorf("authenticated T1 at 16 = %x", got)
	}
	if b[26] != 0xbe || b[27] != 0xef {
		t.Errorf("authenticated SSID at 26 = %x", b[26:28])
	}
	h := hmac.New(sha256.New, key)
	h.Write(b[:96])
	if !bytes.Equal(b[96:112], h.Sum(nil)[:16]) {
		t.Errorf("HMAC at 96 = %x, want HMAC-SHA-256 of bytes 0-95", b[96:112])
	}
	got, err := ParseSender(b, key)
	if err != nil || got != s {
		t.Fatalf("ParseSender = %+v, %v; want %+v", got, err, s)
	}
	if _, err := ParseSender(b, []byte("another key")); !errors.Is(err, ErrAuth) {
		t.Errorf("ParseSender with the wrong key: error = %v, want ErrAuth", err)
	}
	b[5] ^= 1 // an MBZ octet: covered by the HMAC too
	if _, err := ParseSender(b, key); !errors.Is(err, ErrAuth) {
		t.Errorf("ParseSender of a changed packet: error = %v, want ErrAuth", err)
	}
	b[5] ^= 1

	ref := NewReflector(ReflectorConfig{Key: key, Err: NewErrorEstimate(true, 2000)})
	m, err := ref.Reflect(b, len(b), netip.MustParseAddrPort("[::1]:9"), s.T1.UnixNano()+10, s.T1.UnixNano()+20, 61)
	if err != nil || m != len(b) {
		t.Fatalf("Reflect = %d, %v; want %d", m, err, len(b))
	}
	r, err := ParseReflected(b[:m], key)
	if err != nil {
		t.Fatal(err)
	}
	want := Reflected{Seq: s.Seq, T3: FromUnixNano(s.T1.UnixNano() + 20), Err: NewErrorEstimate(true, 2000), SSID: s.SSID,
		T2: FromUnixNano(s.T1.UnixNano() + 10), SenderSeq: s.Seq, SenderT1: s.T1, SenderErr: s.Err, SenderTTL: 61}
	if r != want {
		t.Fatalf("authenticated reply = %+v, want %+v", r, want)
	}
	if b[80] != 61 || b[48] != 1 || b[51] != 4 {
		t.Errorf("authenticated reply: TTL at 80 = %d, sender seq at 48 = %x", b[80], b[48:52])
	}
	if _, err := ParseReflected(b[:AuthBaseLen-1], key); !errors.Is(err, ErrShort) {
		t.Errorf("ParseReflected(111 bytes) error = %v, want ErrShort", err)
	}
}

func TestReflectTLVs(t *testing.T) {
	for _, c := range []struct{ name, in, want string }{
		{"none", "", ""},
		{"zero padding", "00000000 000000", "00000000 000000"},
		{"extra padding", "00010003 000000", "00010003 000000"},
		{"padding flags cleared", "e0010000", "00010000"},
		{"unknown copied with U", "00030004 01020304 00010000", "80030004 01020304 00010000"},
		{"length past the end", "00010005 01020304", "40010005 01020304"},
		{"short tail", "00010000 0102", "00010000 4102"},
		{"malformed after unknown", "00090000 0001ffff 00", "80090000 4001ffff 00"},
	} {
		b := unhex(t, c.in)
		ReflectTLVs(b)
		if got := hex.EncodeToString(b); got != strings.ReplaceAll(c.want, " ", "") {
			t.Errorf("%s: ReflectTLVs(%s) = %s, want %s", c.name, c.in, got, c.want)
		}
	}
	b := make([]byte, 9)
	if !PutPadding(b) || hex.EncodeToString(b) != "000100050000000000" {
		t.Errorf("PutPadding(9 bytes) = %x", b)
	}
	if PutPadding(b[:3]) {
		t.Error("PutPadding(3 bytes) = true, want false")
	}
}
