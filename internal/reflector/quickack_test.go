package reflector

import (
	"testing"

	"github.com/volley-net/volley/internal/wire"
)

// TestWantsQuickAck: held and one-way probes and every message that is
// not a probe are acknowledged at once, a probe answered at once by its
// reply, and nothing whose client asked for delayed ACKs.
func TestWantsQuickAck(t *testing.T) {
	msg := func(typ wire.Type, f wire.Flags, hold uint32) []byte {
		h := wire.Header{Type: typ, Flags: f, Seq: 1, HoldMicro: hold}
		b := make([]byte, wire.HeaderLen)
		if err := h.Encode(b); err != nil {
			t.Fatal(err)
		}
		return b
	}
	probe := func(f wire.Flags, hold uint32) []byte { return msg(wire.TypeProbe, f, hold) }
	tests := []struct {
		name string
		msg  []byte
		want bool
	}{
		{"probe answered at once", probe(0, 0), false},
		{"held probe", probe(0, 100), true},
		{"held probe, other flags", probe(wire.FlagAuth|wire.FlagStamps, 1), true},
		{"one-way probe (no reply)", probe(wire.FlagOneWay, 0), true},
		{"probe answered at once, other flags", probe(wire.FlagAuth|wire.FlagStamps, 0), false},
		{"hello", msg(wire.TypeHello, 0, 0), true},
		{"close", msg(wire.TypeClose, 0, 0), true},
		{"load", msg(wire.TypeLoad, 0, 5e6), true},
		{"no quickack, held", probe(wire.FlagNoQuickAck, 100), false},
		{"no quickack among others", probe(wire.FlagNoQuickAck|wire.FlagStamps, 100), false},
		{"no quickack, hello", msg(wire.TypeHello, wire.FlagNoQuickAck, 0), false},
		{"shorter than a header", probe(wire.FlagNoQuickAck, 100)[:wire.HeaderLen-1], true},
		{"empty", nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := WantsQuickAck(tt.msg); got != tt.want {
				t.Errorf("WantsQuickAck(%x) = %v, want %v", tt.msg, got, tt.want)
			}
			if got := QuickAck(true)(tt.msg); got != tt.want {
				t.Errorf("QuickAck(true)(%x) = %v, want %v", tt.msg, got, tt.want)
			}
		})
	}
	if QuickAck(false) != nil {
		t.Error("QuickAck(false) is not nil: delayed ACKs would not stay on")
	}
}

// TestWantsQuickAckAllocs: the decision is made on every message a TCP
// reflector reads, and allocates nothing.
func TestWantsQuickAckAllocs(t *testing.T) {
	msg := make([]byte, wire.HeaderLen)
	want := QuickAck(true)
	if n := testing.AllocsPerRun(100, func() { want(msg) }); n != 0 {
		t.Errorf("QuickAck(true)(msg) allocates %v times, want 0", n)
	}
}
