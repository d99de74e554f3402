package reflector

import (
	"testing"

	"github.com/volley-net/volley/internal/wire"
)

// TestWantsQuickAck: every message is acknowledged at once but one whose
// client asked for delayed ACKs.
func TestWantsQuickAck(t *testing.T) {
	msg := func(f wire.Flags) []byte {
		h := wire.Header{Type: wire.TypeProbe, Flags: f, Seq: 1}
		b := make([]byte, wire.HeaderLen)
		if err := h.Encode(b); err != nil {
			t.Fatal(err)
		}
		return b
	}
	tests := []struct {
		name string
		msg  []byte
		want bool
	}{
		{"no flags", msg(0), true},
		{"other flags", msg(wire.FlagAuth | wire.FlagStamps | wire.FlagOneWay), true},
		{"no quickack", msg(wire.FlagNoQuickAck), false},
		{"no quickack among others", msg(wire.FlagNoQuickAck | wire.FlagStamps), false},
		{"shorter than a header", msg(wire.FlagNoQuickAck)[:wire.HeaderLen-1], true},
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
