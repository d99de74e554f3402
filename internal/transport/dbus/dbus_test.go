package dbus

import (
	"bufio"
	"encoding/binary"
	"io"
	"net/netip"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/volley-net/volley/internal/testenv"
)

func TestAddress(t *testing.T) {
	t.Setenv("DBUS_SESSION_BUS_ADDRESS", "unix:path=/run/s")
	t.Setenv("DBUS_SYSTEM_BUS_ADDRESS", "")
	for _, tt := range []struct{ in, want, err string }{
		{"session", "unix:path=/run/s", ""},
		{"system", "unix:path=/var/run/dbus/system_bus_socket", ""},
		{"unix:path=/tmp/b", "unix:path=/tmp/b", ""},
		{"", "", "no bus named"},
		{"sesion", "", "want session, system or a D-Bus address"},
	} {
		got, err := Address(tt.in)
		if got != tt.want || (err == nil) != (tt.err == "") || (err != nil && !strings.Contains(err.Error(), tt.err)) {
			t.Errorf("Address(%q) = %q, %v; want %q, error with %q", tt.in, got, err, tt.want, tt.err)
		}
	}
	t.Setenv("DBUS_SESSION_BUS_ADDRESS", "")
	if _, err := Address("session"); err == nil || !strings.Contains(err.Error(), "DBUS_SESSION_BUS_ADDRESS") {
		t.Errorf("Address(session) without the variable: %v", err)
	}
}

// privateBus starts a dbus-daemon of the test's own (never the user's
// session bus) and returns its address; it is stopped by PID at the end.
func privateBus(t *testing.T) string {
	t.Helper()
	_, err := exec.LookPath("dbus-daemon")
	testenv.Require(t, "dbus", err)
	cmd := exec.Command("dbus-daemon", "--session", "--nofork", "--nopidfile", "--print-address=1")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = io.Discard
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	addr, _ := bufio.NewReader(out).ReadString('\n')
	if addr = strings.TrimSpace(addr); addr == "" {
		t.Fatal("dbus-daemon printed no address")
	}
	return addr
}

// probe makes a volley-like probe: magic, type, sequence number, hold.
func probe(seq uint64, holdMicro uint32) []byte {
	b := make([]byte, headerBytes)
	binary.BigEndian.PutUint16(b, 0x564C)
	b[2], b[3] = 1, typeProbe
	binary.BigEndian.PutUint64(b[16:], seq)
	binary.BigEndian.PutUint32(b[60:], holdMicro)
	return b
}

// TestCallsInOrder: a client's calls are answered in the order it made
// them, a held reply goes out through WriteTo as its call's answer, a
// dropped probe is answered with nothing (which Read skips), and a name
// taken twice is an error.
func TestCallsInOrder(t *testing.T) {
	bus := privateBus(t)
	l, err := Listen(bus, "")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if _, err := Listen(bus, ""); err == nil || !strings.Contains(err.Error(), "is taken") {
		t.Errorf("a second Listen on the name: %v, want it taken", err)
	}
	held := make(chan netip.AddrPort, 1)
	l.SetHandler(func(msg []byte, from netip.AddrPort) []byte {
		seq := binary.BigEndian.Uint64(msg[16:])
		switch {
		case binary.BigEndian.Uint32(msg[60:]) > 0:
			held <- from
			return nil
		case seq%10 == 7:
			return nil // dropped
		}
		return msg
	})
	c, err := Dial(bus, "")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	const n = 500
	for i := uint64(1); i <= n; i++ {
		if _, err := c.Write(probe(i, 0)); err != nil {
			t.Fatal(err)
		}
	}
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	buf := make([]byte, 128)
	last := uint64(0)
	for got := 0; got < n-n/10; got++ {
		k, err := c.Read(buf)
		if err != nil {
			t.Fatalf("after %d replies: %v", got, err)
		}
		seq := binary.BigEndian.Uint64(buf[16:k])
		if seq <= last || seq%10 == 7 {
			t.Fatalf("reply %d after %d: want every answered probe, in order", seq, last)
		}
		last = seq
	}
	// A held reply.
	if _, err := c.Write(probe(1000, 500)); err != nil {
		t.Fatal(err)
	}
	from := <-held
	reply := probe(1000, 500)
	reply[7] = 42
	if _, err := l.WriteTo(reply, from); err != nil {
		t.Fatalf("WriteTo the held call: %v", err)
	}
	k, err := c.Read(buf)
	if err != nil || k != headerBytes || buf[7] != 42 {
		t.Fatalf("held reply: %d bytes, %v, marker %d", k, err, buf[7])
	}
	if _, err := l.WriteTo(reply, from); err == nil {
		t.Error("WriteTo answered the same call twice")
	}
}
