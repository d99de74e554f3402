package ifstats

import (
	"net"
	"runtime"
	"testing"
)

func TestReadLoopback(t *testing.T) {
	if runtime.GOOS != "linux" {
		if _, err := Read("lo"); err == nil {
			t.Fatal("Read on a platform without /sys returned no error")
		}
		return
	}
	before, err := Read("lo")
	if err != nil {
		t.Fatal(err)
	}
	// Send ourselves a datagram over loopback: lo counts it both ways.
	c, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.WriteTo([]byte("x"), c.LocalAddr()); err != nil {
		t.Fatal(err)
	}
	after, err := Read("lo")
	if err != nil {
		t.Fatal(err)
	}
	if d := after.Sub(before); d.RXPackets < 1 || d.TXPackets < 1 {
		t.Fatalf("lo counted %+v for one datagram, want at least one each way", d)
	}
}

func TestReadErrors(t *testing.T) {
	for _, name := range []string{"", "../etc", "no-such-interface-0"} {
		if _, err := Read(name); err == nil {
			t.Errorf("Read(%q) = nil error", name)
		}
	}
}
