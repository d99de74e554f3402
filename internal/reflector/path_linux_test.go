package reflector

import (
	"net"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/volley-net/volley/internal/transport"
	"github.com/volley-net/volley/internal/wire"
)

// TestServePath: Serve on a socket whose path is on answers a probe that
// asks with what its IP header said on loopback: the sender's TTL and
// traffic class, unchanged.
func TestServePath(t *testing.T) {
	conn, err := transport.ListenUDP("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if err := conn.(transport.PathReader).EnablePath(); err != nil {
		t.Fatalf("EnablePath = %v", err)
	}
	r, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	stop := serving(t, r, conn)
	defer func() {
		stop()
		conn.Close()
	}()
	c, exchange := udpExchange(t, conn.LocalAddr().String(), 5*time.Second)
	const ttl, tclass = 33, 46<<2 | 1 // EF, ECT(1)
	rc, err := c.(*net.UDPConn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var serr error
	if err := rc.Control(func(fd uintptr) {
		serr = unix.SetsockoptInt(int(fd), unix.IPPROTO_IP, unix.IP_TOS, tclass)
		if serr == nil {
			serr = unix.SetsockoptInt(int(fd), unix.IPPROTO_IP, unix.IP_TTL, ttl)
		}
	}); err != nil || serr != nil {
		t.Fatalf("set IP_TOS and IP_TTL: %v %v", err, serr)
	}
	cookie := exchange(wire.Header{Type: wire.TypeHello, Seq: 1})
	reply := exchange(wire.Header{Type: wire.TypeProbe, Flags: wire.FlagPath, Token: cookie.Token, Nonce: 1, Seq: 1})
	if reply.Type != wire.TypeReply || reply.Flags&wire.FlagPath == 0 || reply.TTL != ttl || reply.TClass != tclass {
		t.Fatalf("reply %+v: want FlagPath, TTL %d, TClass %#x", reply, ttl, tclass)
	}
}
