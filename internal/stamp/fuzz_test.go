package stamp

import (
	"bytes"
	"errors"
	"net/netip"
	"testing"
)

// The fuzzers are seeded from the encoders, the capture and TLVs both
// well formed and not; a fuzzed input's first byte picks the mode (odd:
// authenticated with fuzzKey).

var fuzzKey = []byte("fuzz key")

func keyOf(mode byte) []byte {
	if mode&1 != 0 {
		return fuzzKey
	}
	return nil
}

func seeds(f *testing.F, put func(b []byte, key []byte)) {
	for _, mode := range []byte{0, 1} {
		key := keyOf(mode)
		base := BaseLength(key)
		for _, n := range []int{0, base - 1, base, base + 3, base + 4, base + 40} {
			b := make([]byte, max(n, base))
			put(b, key)
			if n > base {
				PutPadding(b[base:])
			}
			f.Add(mode, b[:n])
		}
		b := make([]byte, base+12)
		put(b, key)
		copy(b[base:], []byte{0, 7, 0, 2, 1, 2, 0, 1, 0xff, 0xff, 0, 0}) // unknown, then malformed
		f.Add(mode, b)
	}
}

func FuzzParseSender(f *testing.F) {
	seeds(f, func(b, key []byte) {
		_ = PutSender(b, &Sender{Seq: 3, T1: 0xeeb6ff27_66699b7e, Err: 1, SSID: 9}, key)
	})
	f.Add(byte(0), captureSender(f))
	f.Fuzz(func(t *testing.T, mode byte, b []byte) {
		key := keyOf(mode)
		s, err := ParseSender(b, key)
		if err != nil {
			if !errors.Is(err, ErrShort) && !errors.Is(err, ErrAuth) {
				t.Fatalf("ParseSender(%x) error %v: not a sentinel", b, err)
			}
			return
		}
		// Re-encoding gives the packet back, MBZ octets aside.
		enc := bytes.Clone(b)
		if err := PutSender(enc, &s, key); err != nil {
			t.Fatal(err)
		}
		if back, err := ParseSender(enc, key); err != nil || back != s {
			t.Fatalf("ParseSender(PutSender(%+v)) = %+v, %v", s, back, err)
		}
	})
}

func FuzzParseReflected(f *testing.F) {
	seeds(f, func(b, key []byte) {
		_ = PutReflected(b, &Reflected{Seq: 3, T3: 9, Err: 1, SSID: 2, T2: 8, SenderSeq: 4, SenderT1: 7, SenderErr: 1, SenderTTL: 64}, key)
	})
	f.Add(byte(0), unhex(f, captureReplyHex))
	f.Fuzz(func(t *testing.T, mode byte, b []byte) {
		key := keyOf(mode)
		r, err := ParseReflected(b, key)
		if err != nil {
			if !errors.Is(err, ErrShort) && !errors.Is(err, ErrAuth) {
				t.Fatalf("ParseReflected(%x) error %v: not a sentinel", b, err)
			}
			return
		}
		enc := bytes.Clone(b)
		if err := PutReflected(enc, &r, key); err != nil {
			t.Fatal(err)
		}
		if back, err := ParseReflected(enc, key); err != nil || back != r {
			t.Fatalf("ParseReflected(PutReflected(%+v)) = %+v, %v", r, back, err)
		}
	})
}

func FuzzReflect(f *testing.F) {
	seeds(f, func(b, key []byte) {
		_ = PutSender(b, &Sender{Seq: 3, T1: 0xeeb6ff27_66699b7e, Err: 1, SSID: 9}, key)
	})
	f.Add(byte(2), captureSender(f))
	f.Fuzz(func(t *testing.T, mode byte, b []byte) {
		key := keyOf(mode)
		req := bytes.Clone(b)
		r := NewReflector(ReflectorConfig{Key: key, Stateful: mode&2 != 0, MaxSessions: 1})
		n := len(b)
		m, err := r.Reflect(b, n, netip.MustParseAddrPort("127.0.0.1:862"), 5, 6, 7)
		if m > n || (err == nil && m != n) || (err != nil && m != 0) {
			t.Fatalf("Reflect(%x) = %d, %v: want n (%d), or 0 and an error", req, m, err, n)
		}
		if err != nil {
			return
		}
		rep, err := ParseReflected(b[:m], key)
		if err != nil {
			t.Fatalf("Reflect(%x) = %x, which does not parse: %v", req, b[:m], err)
		}
		s, _ := ParseSender(req, key)
		if rep.SenderSeq != s.Seq || rep.SenderT1 != s.T1 || rep.SSID != s.SSID || rep.SenderTTL != 7 {
			t.Fatalf("Reflect(%x) = %+v: not the reply to %+v", req, rep, s)
		}
		// The TLVs keep their types, lengths and values: only the flags
		// bytes of their headers may change.
		base := BaseLength(key)
		for i := base; i < m; i++ {
			if b[i] != req[i] && !tlvHeaderAt(req[base:], i-base) {
				t.Fatalf("Reflect(%x) changed byte %d (%x to %x), not a TLV's flags", req, i, req[i], b[i])
			}
		}
	})
}

// tlvHeaderAt reports whether a walk of the TLVs b meets a header (or a
// malformed tail) at offset at.
func tlvHeaderAt(b []byte, at int) bool {
	for off := 0; off < len(b); {
		if off == at {
			return true
		}
		if len(b)-off < TLVHeaderLen {
			return false
		}
		off += TLVHeaderLen + (int(b[off+2])<<8 | int(b[off+3]))
	}
	return false
}
