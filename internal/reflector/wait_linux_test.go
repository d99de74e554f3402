package reflector

import (
	"testing"
	"time"

	"github.com/volley-net/volley/internal/transport/udp"
	"github.com/volley-net/volley/internal/wire"
)

// blockSpy is a UDP socket that tells each switch of its reads between
// the poller and the kernel.
type blockSpy struct {
	*udp.PacketConn
	calls chan bool
}

func (s *blockSpy) SetBlockingReads(on bool) error {
	err := s.PacketConn.SetBlockingReads(on)
	if err == nil {
		s.calls <- on
	}
	return err
}

// TestServeWaitsWhereProbesAre: a listener's reads wait in the poller
// until a datagram comes, in the kernel while they come, and in the
// poller again once none came for idleAfter; replies go out in both,
// held ones too. (TestKernelWaitAfter checks when.)
func TestServeWaitsWhereProbesAre(t *testing.T) {
	conn, err := udp.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	spy := &blockSpy{PacketConn: conn, calls: make(chan bool, 16)}
	r, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	stop := serving(t, r, spy)
	defer func() {
		stop()
		conn.Close()
	}()
	next := func(want bool) {
		t.Helper()
		select {
		case on := <-spy.calls:
			if on != want {
				t.Fatalf("SetBlockingReads(%v), want %v", on, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("no SetBlockingReads(%v) in 10s", want)
		}
	}
	_, exchange := udpExchange(t, conn.LocalAddr().String(), 30*time.Second)
	if len(spy.calls) != 0 {
		t.Fatalf("reads moved %d times before any datagram", len(spy.calls))
	}
	cookie := exchange(wire.Header{Type: wire.TypeHello, Seq: 1})
	next(true)
	for seq := uint64(1); seq <= 3; seq++ {
		if reply := exchange(wire.Header{Type: wire.TypeProbe, Token: cookie.Token, Nonce: 1, Seq: seq}); reply.Type != wire.TypeReply || reply.Seq != seq {
			t.Fatalf("probe %d: reply %+v", seq, reply)
		}
	}
	next(false) // idle
	// The first probe of the next spell is held: its reply leaves from
	// the holding goroutine, after the loop moved the reads (under the
	// reflector's lock, which the sends hold).
	if reply := exchange(wire.Header{Type: wire.TypeProbe, Token: cookie.Token, Nonce: 1, Seq: 4, HoldMicro: 20000}); reply.Type != wire.TypeReply || reply.Seq != 4 {
		t.Fatalf("held probe after the idle spell: reply %+v", reply)
	}
	next(true)
	stop()
	next(false) // Serve's end puts them back
}
