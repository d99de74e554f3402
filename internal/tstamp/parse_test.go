//go:build linux && (amd64 || arm64)

package tstamp

import (
	"encoding/hex"
	"testing"
	"unsafe"
)

// Control messages captured on loopback (Linux 6.18, amd64): a received
// datagram's SCM_TIMESTAMPING, and an error-queue entry with its transmit
// stamp and IP_RECVERR (ENOMSG, origin timestamping, SCM_TSTAMP_SND, ID 1).
const (
	capturedRx = "4000000000000000010000002500000090c30c6b000000007b056301000000000000000000000000000000000000000000000000000000000000000000000000"
	capturedTx = "4000000000000000010000002500000090c30c6b00000000d60363010000000000000000000000000000000000000000000000000000000000000000000000003000000000000000000000000b0000002a00000004000000000000000100000000000000000000000000000000000000"
)

// aligned decodes h into 8-byte-aligned memory, as a control buffer is.
func aligned(t *testing.T, h string) []byte {
	t.Helper()
	b, err := hex.DecodeString(h)
	if err != nil {
		t.Fatal(err)
	}
	words := make([]uint64, (len(b)+7)/8)
	buf := unsafeBytes(words)[:len(b)]
	copy(buf, b)
	return buf
}

func TestParseCaptured(t *testing.T) {
	const sec = 0x6b0cc390 * 1_000_000_000
	if got := ParseRx(aligned(t, capturedRx)); got != (Stamp{SW: sec + 0x0163057b}) {
		t.Errorf("ParseRx = %+v, want SW %d", got, sec+0x0163057b)
	}
	tx, ok := ParseTx(aligned(t, capturedTx))
	if want := (TxStamp{ID: 1, Stamp: Stamp{SW: sec + 0x016303d6}}); !ok || tx != want {
		t.Errorf("ParseTx = %+v, %v; want %+v, true", tx, ok, want)
	}
	// The receive stamp alone is not a transmit stamp; a truncated
	// buffer is nothing.
	if _, ok := ParseTx(aligned(t, capturedRx)); ok {
		t.Error("ParseTx took a receive stamp without IP_RECVERR for a transmit stamp")
	}
	b := aligned(t, capturedTx)
	for n := range len(b) {
		ParseRx(b[:n]) // must not panic
		if s, ok := ParseTx(b[:n]); ok && n < 64+48 {
			t.Errorf("ParseTx of %d bytes = %+v, true; want nothing", n, s)
		}
	}
	// The scheduler's stamp of the same datagram (SCM_TSTAMP_SCHED in
	// ee_info, the rest as the transmit stamp's) is one, marked.
	sched := aligned(t, capturedTx)
	sched[64+16+8] = 1  // SCM_TSTAMP_SCHED
	sched[16+8] -= 0x10 // 16 ns earlier: the low byte of tv_nsec
	if tx, ok := ParseTx(sched); !ok || tx != (TxStamp{ID: 1, Sched: true, Stamp: Stamp{SW: sec + 0x016303c6}}) {
		t.Errorf("ParseTx of a scheduler stamp = %+v, %v; want ID 1, Sched, SW %d", tx, ok, sec+0x016303c6)
	}
	// An acknowledgment's stamp (SCM_TSTAMP_ACK, TCP's) is not a
	// datagram's.
	ack := aligned(t, capturedTx)
	ack[64+16+8] = 2
	if tx, ok := ParseTx(ack); ok {
		t.Errorf("ParseTx took an acknowledgment's stamp for a transmit stamp: %+v", tx)
	}
	// An ICMP error (origin ICMP) on the error queue is not a stamp.
	icmp := aligned(t, capturedTx)
	icmp[64+16+4] = 2 // SO_EE_ORIGIN_ICMP
	if _, ok := ParseTx(icmp); ok {
		t.Error("ParseTx took an ICMP error for a transmit stamp")
	}
}

func unsafeBytes(w []uint64) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(&w[0])), 8*len(w))
}
