package dbus

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/xml"
	"errors"
	"io"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	godbus "github.com/godbus/dbus/v5"
	"github.com/godbus/dbus/v5/introspect"

	"github.com/volley-net/volley/internal/testenv"
	"github.com/volley-net/volley/internal/testsock"
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
	// --address: the session configuration's listen address leaves a
	// socket file in /tmp when the daemon is killed; this one goes with
	// the test's directory.
	cmd := exec.Command("dbus-daemon", "--session", "--nofork", "--nopidfile", "--print-address=1",
		"--address=unix:dir="+testsock.ShortDir(t))
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

// TestIntrospection: walking the tree from "/", as busctl tree and gdbus
// introspect --recurse do, finds the reflector's object; no node describes
// an interface or a method twice; every method of the standard interfaces
// that a node advertises answers, GetMachineId with the bus daemon's own
// answer (the two run on one host); and a path outside the tree is an
// unknown object.
func TestIntrospection(t *testing.T) {
	bus := privateBus(t)
	l, err := Listen(bus, "")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	c, err := godbus.Connect(bus)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var busID string
	if err := c.BusObject().Call("org.freedesktop.DBus.Peer.GetMachineId", 0).Store(&busID); err != nil {
		t.Fatalf("the bus's GetMachineId: %v", err)
	}

	found := map[godbus.ObjectPath][]string{} // path: its interfaces
	var walk func(path godbus.ObjectPath)
	walk = func(path godbus.ObjectPath) {
		obj := c.Object(DefaultName, path)
		var data string
		if err := obj.Call("org.freedesktop.DBus.Introspectable.Introspect", 0).Store(&data); err != nil {
			t.Errorf("Introspect %s: %v", path, err)
			return
		}
		var node introspect.Node
		if err := xml.Unmarshal([]byte(data), &node); err != nil {
			t.Errorf("Introspect %s: %v\n%s", path, err, data)
			return
		}
		ifaces := map[string]bool{}
		for _, iface := range node.Interfaces {
			if ifaces[iface.Name] {
				t.Errorf("%s describes %s twice:\n%s", path, iface.Name, data)
			}
			ifaces[iface.Name] = true
			found[path] = append(found[path], iface.Name)
			methods := map[string]bool{}
			for _, m := range iface.Methods {
				if methods[m.Name] {
					t.Errorf("%s: %s describes %s twice:\n%s", path, iface.Name, m.Name, data)
				}
				methods[m.Name] = true
				if iface.Name == Interface {
					continue // volley's own, called by the other tests
				}
				call := obj.Call(iface.Name+"."+m.Name, 0)
				if call.Err != nil {
					t.Errorf("%s advertises %s.%s, which answers %v", path, iface.Name, m.Name, call.Err)
					continue
				}
				var want string // the signature advertised
				for _, a := range m.Args {
					if a.Direction == "out" {
						want += a.Type
					}
				}
				if got := godbus.SignatureOf(call.Body...).String(); got != want {
					t.Errorf("%s: %s.%s answers %q, advertised %q", path, iface.Name, m.Name, got, want)
				}
				if m.Name == "GetMachineId" && (len(call.Body) != 1 || call.Body[0] != busID) {
					t.Errorf("%s: GetMachineId = %v, want the bus's %q", path, call.Body, busID)
				}
			}
		}
		for _, child := range node.Children {
			p := path + "/" + godbus.ObjectPath(child.Name)
			if path == "/" {
				p = "/" + godbus.ObjectPath(child.Name)
			}
			walk(p)
		}
	}
	walk("/")
	if !slices.Contains(found[Path], Interface) {
		t.Errorf("walking from / found %v, want %s at %s", found, Interface, Path)
		walk(Path) // what it says of itself
	}
	if len(found) != 4 {
		t.Errorf("walking from / found %d objects (%v), want /, /net, /net/volley and %s", len(found), found, Path)
	}
	err = c.Object(DefaultName, "/net/other").Call("org.freedesktop.DBus.Introspectable.Introspect", 0).Err
	if e := (godbus.Error{}); !errors.As(err, &e) || e.Name != "org.freedesktop.DBus.Error.UnknownObject" {
		t.Errorf("Introspect /net/other: %v, want UnknownObject", err)
	}
}

// TestMachineID: the first file holding 32 hexadecimal digits gives the
// machine ID; without one, the error names the files.
func TestMachineID(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := dir + "/" + name
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := write("good", "3d1219c7c4c5404aaa1f6d2a48adfda4\n")
	short := write("short", "3d1219c7\n")
	notHex := write("nothex", "zz1219c7c4c5404aaa1f6d2a48adfdzz\n")
	missing := dir + "/missing"
	defer func(f []string) { machineIDFiles = f }(machineIDFiles)
	for _, tt := range []struct {
		files []string
		want  string
	}{
		{[]string{good, missing}, "3d1219c7c4c5404aaa1f6d2a48adfda4"},
		{[]string{missing, good}, "3d1219c7c4c5404aaa1f6d2a48adfda4"},
		{[]string{short, notHex, good}, "3d1219c7c4c5404aaa1f6d2a48adfda4"},
		{[]string{short, notHex, missing}, ""},
	} {
		machineIDFiles = tt.files
		got, err := machineID()
		if got != tt.want || (err == nil) != (tt.want != "") || (err != nil && !strings.Contains(err.Error(), missing)) {
			t.Errorf("machineID() from %v = %q, %v; want %q", tt.files, got, err, tt.want)
		}
	}
}

// TestNoOwner: a call to a name nobody holds is answered by the bus with
// an error, which Read says as no reflector (refused), naming the name;
// Read in the kernel (SetBlockingReads) says it alike.
func TestNoOwner(t *testing.T) {
	bus := privateBus(t)
	for _, blocking := range []bool{false, true} {
		c, err := Dial(bus, "net.volley.Nobody")
		if err != nil {
			t.Fatal(err)
		}
		if blocking {
			runtime.LockOSThread()
			if err := c.SetBlockingReads(true); err != nil {
				t.Logf("no kernel wait here (%v): reads in the poller", err)
			}
		}
		if _, err := c.Write(probe(1, 0)); err != nil {
			t.Fatal(err)
		}
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		_, err = c.Read(make([]byte, 128))
		if !errors.Is(err, syscall.ECONNREFUSED) || !strings.Contains(err.Error(), "net.volley.Nobody") {
			t.Errorf("blocking %v: Read = %v, want no reflector (refused) naming the name", blocking, err)
		}
		c.Close()
		if blocking {
			runtime.UnlockOSThread()
		}
	}
}

// TestSocketPath: the unix: addresses volley connects to, and what it
// refuses.
func TestSocketPath(t *testing.T) {
	for _, tt := range []struct{ in, want, err string }{
		{"unix:path=/run/user/1/bus", "/run/user/1/bus", ""},
		{"unix:path=/tmp/a%20b,guid=0123", "/tmp/a b", ""},
		{"unix:guid=0123,abstract=/tmp/dbus-x", "@/tmp/dbus-x", ""},
		{"tcp:host=127.0.0.1,port=4", "", "unix: addresses"},
		{"unix:tmpdir=/tmp", "", "unix: addresses"},
		{"unix:path=/tmp/%zz", "", "bad escape"},
	} {
		got, err := socketPath(tt.in)
		if got != tt.want || (err == nil) != (tt.err == "") || (err != nil && !strings.Contains(err.Error(), tt.err)) {
			t.Errorf("socketPath(%q) = %q, %v; want %q, error with %q", tt.in, got, err, tt.want, tt.err)
		}
	}
}

// pipeBus returns a busConn on one end of a socket pair, and the other end
// as the bus that the test writes.
func pipeBus(t *testing.T) (*busConn, *net.UnixConn) {
	t.Helper()
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	conn := func(fd int) *net.UnixConn {
		f := os.NewFile(uintptr(fd), "bus")
		defer f.Close()
		c, err := net.FileConn(f)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c.(*net.UnixConn)
	}
	return &busConn{uc: conn(fds[0]), in: make([]byte, 0, inBuffer)}, conn(fds[1])
}

// encoded is m as the bus would send it, with serial 1.
func encoded(t *testing.T, m *godbus.Message) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := m.EncodeTo(&b, binary.LittleEndian); err != nil {
		t.Fatal(err)
	}
	binary.LittleEndian.PutUint32(b.Bytes()[8:], 1)
	return b.Bytes()
}

// TestBusRead: messages cut anywhere, a read deadline between two pieces
// of one, a message godbus refuses and one larger than volley takes (its
// length declared up front) are read as the bus meant: each message whole,
// the refused and the large ones passed over, and the read buffer grown
// by what came, never by the length declared.
func TestBusRead(t *testing.T) {
	b, bus := pipeBus(t)
	reply := func(body []byte) []byte {
		m := call("", Path, Interface, "Probe", body)
		return encoded(t, m)
	}
	small := reply([]byte("first"))
	// A message in three pieces, with a deadline between the first two.
	bus.Write(small[:5])
	b.setReadDeadline(time.Now().Add(20 * time.Millisecond))
	if _, err := b.read(); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read of a message cut short: %v, want the deadline", err)
	}
	b.setReadDeadline(time.Now().Add(5 * time.Second))
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Go(func() {
		bus.Write(small[5:20])
		bus.Write(small[20:]) // a read may well come between the two
	})
	if m, err := b.read(); err != nil || string(m.Body[0].([]byte)) != "first" {
		t.Fatalf("the message cut by a deadline: %v, %v", m, err)
	}
	// A message godbus refuses (a header field of the wrong type), then
	// one declaring 1 GiB of body, sent in part, then the next message.
	bad := reply([]byte("bad"))
	bad[16] = 0 // the first header field's code: 0 is invalid
	huge := reply(nil)
	binary.LittleEndian.PutUint32(huge[4:], 100<<20)
	wg.Go(func() {
		bus.Write(bad)
		bus.Write(huge)
		junk := make([]byte, 64<<10)
		for range 20 { // 1.25 MiB of the 100 MiB declared
			bus.Write(junk)
		}
	})
	b.setReadDeadline(time.Now().Add(500 * time.Millisecond))
	if m, err := b.read(); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read after a refused and a huge message: %v, %v; want nothing until the deadline", m, err)
	}
	if cap(b.in) > 2*inBuffer || b.skip == 0 {
		t.Errorf("after 1.25 MiB of a message declaring 100 MiB: buffer of %d bytes, %d bytes still to skip; want it thrown away as it comes",
			cap(b.in), b.skip)
	}
	// A message larger than the buffer, within the limit, read whole.
	big := reply(bytes.Repeat([]byte("x"), 300<<10))
	b2, bus2 := pipeBus(t)
	wg.Go(func() { bus2.Write(big) })
	b2.setReadDeadline(time.Now().Add(5 * time.Second))
	if m, err := b2.read(); err != nil || len(m.Body[0].([]byte)) != 300<<10 {
		t.Fatalf("a 300 KiB message: %v", err)
	}
	// Not D-Bus at all: an error naming what came.
	bus2.Write([]byte("GET / HTTP/1.1\r\n\r\n"))
	if _, err := b2.read(); err == nil || !strings.Contains(err.Error(), "byte order") {
		t.Errorf("read of what is not D-Bus: %v", err)
	}
}

// TestLimits: calls larger than volley sends, within what it reads whole
// and beyond (the rest thrown away as it comes), are answered with
// LimitsExceeded and never reach the handler, nor does a large OneWay
// signal; the reflector answers the next probe as before.
func TestLimits(t *testing.T) {
	bus := privateBus(t)
	l, err := Listen(bus, "")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	largest := 0
	seen := make(chan int, 16)
	l.SetHandler(func(msg []byte, from netip.AddrPort) []byte {
		seen <- len(msg)
		return msg
	})
	c, err := godbus.Connect(bus)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	obj := c.Object(DefaultName, Path)
	for _, size := range []int{MaxMessage + 100, maxFrame + 1<<20} {
		// No answer would wait for ever; godbus encodes a byte array a
		// byte at a time, slow under -race.
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		err := obj.CallWithContext(ctx, Interface+".Probe", 0, make([]byte, size)).Err
		cancel()
		if e := (godbus.Error{}); !errors.As(err, &e) || e.Name != limitsExceeded {
			t.Errorf("a Probe of %d bytes: %v, want %s", size, err, limitsExceeded)
		}
	}
	if err := c.Emit(Path, Interface+".OneWay", make([]byte, MaxMessage+100)); err != nil {
		t.Fatal(err)
	}
	var reply []byte
	if err := obj.Call(Interface+".Probe", 0, probe(1, 0)).Store(&reply); err != nil || len(reply) != headerBytes {
		t.Fatalf("a probe after the large ones: %d bytes, %v", len(reply), err)
	}
	for len(seen) > 0 {
		largest = max(largest, <-seen)
	}
	if largest > MaxMessage {
		t.Errorf("the handler saw a message of %d bytes", largest)
	}
}

// TestClientAnswers: a call made to a client's name is answered while it
// reads (Ping with a reply, anything else with an error, one too large to
// read with LimitsExceeded), and Close ends
// a Read waiting without a deadline, in the poller and in the kernel.
func TestClientAnswers(t *testing.T) {
	bus := privateBus(t)
	peer, err := godbus.Connect(bus)
	if err != nil {
		t.Fatal(err)
	}
	defer peer.Close()
	for _, blocking := range []bool{false, true} {
		c, err := Dial(bus, "")
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() {
			if blocking {
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
				if err := c.SetBlockingReads(true); err != nil {
					t.Logf("no kernel wait here (%v): reads in the poller", err)
				}
			}
			_, err := c.Read(make([]byte, 128))
			done <- err
		}()
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		obj := peer.Object(c.LocalAddr().(Addr).Name, "/")
		if err := obj.CallWithContext(ctx, "org.freedesktop.DBus.Peer.Ping", 0).Err; err != nil {
			t.Errorf("blocking %v: Ping to the client: %v", blocking, err)
		}
		err = obj.CallWithContext(ctx, "org.example.Nothing.Here", 0).Err
		if e := (godbus.Error{}); !errors.As(err, &e) || e.Name != "org.freedesktop.DBus.Error.UnknownMethod" {
			t.Errorf("blocking %v: another call to the client: %v, want UnknownMethod", blocking, err)
		}
		// godbus encodes a byte array a byte at a time: slow under
		// -race, so the large call has a bound of its own.
		bigCtx, bigCancel := context.WithTimeout(t.Context(), time.Minute)
		err = obj.CallWithContext(bigCtx, Interface+".Probe", 0, make([]byte, maxFrame+1)).Err
		bigCancel()
		if e := (godbus.Error{}); !errors.As(err, &e) || e.Name != limitsExceeded {
			t.Errorf("blocking %v: a call to the client larger than it reads: %v, want %s", blocking, err, limitsExceeded)
		}
		cancel()
		start := time.Now()
		c.Close()
		select {
		case err := <-done:
			if !errors.Is(err, net.ErrClosed) {
				t.Errorf("blocking %v: Read after Close: %v, want net.ErrClosed", blocking, err)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("blocking %v: Read still waits 5 s after Close", blocking)
		}
		t.Logf("blocking %v: Read ended %v after Close", blocking, time.Since(start))
	}
}
