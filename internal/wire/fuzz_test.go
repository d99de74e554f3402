package wire

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"
)

// The fuzzers below are seeded from the encoders (PutStamps, PutFollowUp,
// Signer.Sign, OneWayResults.AppendBinary); FuzzDecode is in wire_test.go.

func FuzzStampsOf(f *testing.F) {
	for _, s := range []Stamps{{}, {T2K: 1_700_000_000_123456789, PrevSeq: 8, PrevT3K: -5}, {T2K: -1, PrevSeq: 1<<64 - 1, PrevT3K: 1 << 62}} {
		for _, flags := range []Flags{FlagStamps, FlagStamps | FlagAuth, 0} {
			b := make([]byte, HeaderLen+StampsLen+TagLen)
			_ = (&Header{Type: TypeReply, Flags: flags, Seq: 9}).Encode(b)
			PutStamps(b, s)
			f.Add(b)
			f.Add(b[:HeaderLen+StampsLen])
			f.Add(b[:HeaderLen+StampsLen-1])
		}
	}
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		s, ok := StampsOf(b)
		has := len(b) >= HeaderLen+StampsLen && FlagsOf(b)&FlagStamps != 0
		if ok != has {
			t.Fatalf("StampsOf(%x) ok = %v, want %v", b, ok, has)
		}
		if !ok {
			if s != (Stamps{}) {
				t.Fatalf("StampsOf(%x) = %+v, false; want the zero Stamps", b, s)
			}
			return
		}
		enc := bytes.Clone(b)
		clear(enc[HeaderLen : HeaderLen+StampsLen])
		PutStamps(enc, s)
		if !bytes.Equal(enc, b) {
			t.Fatalf("PutStamps(StampsOf(%x)) = %x", b, enc)
		}
	})
}

func FuzzFollowUps(f *testing.F) {
	b := make([]byte, 3*FollowUpLen)
	PutFollowUp(b, 7, 1_700_000_000_000_000_007)
	PutFollowUp(b[FollowUpLen:], 8, -1)
	PutFollowUp(b[2*FollowUpLen:], 1<<64-1, 0)
	for n := range len(b) + 1 {
		f.Add(b[:n])
	}
	f.Fuzz(func(t *testing.T, p []byte) {
		var enc []byte
		FollowUps(p, func(seq uint64, t3k int64) {
			enc = append(enc, make([]byte, FollowUpLen)...)
			PutFollowUp(enc[len(enc)-FollowUpLen:], seq, t3k)
		})
		// Every whole follow-up, in order; a cut one at the end is not read.
		if whole := len(p) / FollowUpLen * FollowUpLen; !bytes.Equal(enc, p[:whole]) {
			t.Fatalf("FollowUps(%x) re-encoded = %x, want %x", p, enc, p[:whole])
		}
	})
}

func FuzzVerify(f *testing.F) {
	s := NewSigner([]byte("fuzz key"))
	for _, h := range []Header{
		{Type: TypeHello, Seq: 1},
		{Type: TypeProbe, Token: 77, Nonce: 1, Seq: 2, T1: 3},
		{Type: TypeCloseAck, Token: 77, Received: 5},
	} {
		for _, extra := range []int{0, 1, StampsLen} {
			b := make([]byte, HeaderLen+extra+TagLen)
			h.Seal(b, s)
			f.Add(b)
			f.Add(b[:len(b)-1]) // cut: the tag is wrong
		}
	}
	f.Add(make([]byte, HeaderLen+TagLen-1))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, msg []byte) {
		err := s.Verify(msg)
		if err != nil && !errors.Is(err, ErrTag) {
			t.Fatalf("Verify(%x) = %v, want nil or ErrTag", msg, err)
		}
		if len(msg) < HeaderLen+TagLen {
			if err == nil {
				t.Fatalf("Verify(%x) of a message too short for a header and a tag = nil", msg)
			}
			return
		}
		// Signing gives the one tag Verify takes.
		signed := bytes.Clone(msg)
		s.Sign(signed)
		if (err == nil) != bytes.Equal(signed, msg) {
			t.Fatalf("Verify(%x) = %v, but its tag is Sign's: %v", msg, err, bytes.Equal(signed, msg))
		}
		if err := s.Verify(signed); err != nil {
			t.Fatalf("Verify(Sign(%x)) = %v", msg, err)
		}
		signed[len(signed)-1] ^= 1
		if err := s.Verify(signed); !errors.Is(err, ErrTag) {
			t.Fatalf("Verify of a signed message with a flipped tag bit = %v, want ErrTag", err)
		}
	})
}

func FuzzOneWayResults(f *testing.F) {
	for _, r := range []OneWayResults{
		{},
		oneWayWant,
		oneWayBelowZero,
		{Received: 1 << 40, Delay: Snapshot{Count: 3, Mean: -1.5, Min: -7, Max: 1 << 62, Histogram: []byte("hdr")}},
	} {
		b, err := r.AppendBinary(nil)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
		f.Add(append(b, 0xff)) // followed by a tag
		f.Add(b[:len(b)-1])
	}
	f.Add([]byte(`{"received":5,"duplicates":0,"reordered":0,"delay":{}}`)) // the form before
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, p []byte) {
		var r OneWayResults
		if err := r.Decode(p); err != nil {
			if r.Received != 0 || r.HasIPDV || r.Delay.Histogram != nil {
				t.Fatalf("Decode(%x) = %v, and changed the results: %+v", p, err, r)
			}
			return
		}
		n := binary.BigEndian.Uint32(p[4:])
		enc, err := r.AppendBinary(nil)
		if err != nil {
			t.Fatalf("AppendBinary(Decode(%x)) = %v", p, err)
		}
		// The block survives the round trip byte for byte, but for the
		// flags' bits that mean nothing yet.
		want := bytes.Clone(p[:n])
		want[3] &= oneWayIPDV | oneWayBelow
		if !bytes.Equal(enc, want) {
			t.Fatalf("AppendBinary(Decode(%x)) = %x, want %x", p, enc, want)
		}
	})
}
