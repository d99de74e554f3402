package sockopt

import (
	"context"
	"errors"
	"net"
	"testing"
)

// TestApplyAndRead: options set before the bind are read back as the
// kernel applied them.
func TestApplyAndRead(t *testing.T) {
	o := Options{TOS: 0x28, TTL: 9, DF: true, Buffer: 64 << 10}
	lc := net.ListenConfig{Control: o.Control}
	pc, err := lc.ListenPacket(context.Background(), "udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	rc, err := pc.(*net.UDPConn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	g, err := Read(rc, "udp4")
	if err != nil {
		t.Fatal(err)
	}
	// The kernel doubles the buffer sizes it is given (for its own
	// bookkeeping); what it granted is what is reported.
	if g.TOS != 0x28 || g.TTL != 9 || !g.DF || g.SendBuffer < 64<<10 || g.RecvBuffer < 64<<10 {
		t.Fatalf("granted %+v, want tos 0x28, ttl 9, df, buffers of at least 64 KiB", g)
	}
}

func TestUnknownCongestion(t *testing.T) {
	o := Options{TOS: -1, Congestion: "no-such-algorithm"}
	lc := net.ListenConfig{Control: o.Control}
	ln, err := lc.Listen(context.Background(), "tcp4", "127.0.0.1:0")
	if err == nil {
		ln.Close()
		t.Fatal("listening with an unknown congestion control algorithm succeeded")
	}
	if !errors.Is(err, ErrCongestion) {
		t.Fatalf("error %v, want ErrCongestion", err)
	}
}
