package transport

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/volley-net/volley/internal/sockopt"
	"github.com/volley-net/volley/internal/testsock"
	"github.com/volley-net/volley/internal/transport/stream"
	"github.com/volley-net/volley/internal/transport/unixgram"
)

func TestParseTarget(t *testing.T) {
	tests := []struct {
		in      string
		want    string
		wantErr error
	}{
		{"127.0.0.1", "udp://127.0.0.1:7766", nil},
		{"127.0.0.1:9", "udp://127.0.0.1:9", nil},
		{"localhost", "udp://localhost:7766", nil},
		{"udp://localhost:1234", "udp://localhost:1234", nil},
		{"udp://localhost/", "udp://localhost:7766", nil},
		{"::1", "udp://[::1]:7766", nil},
		{"[::1]:5", "udp://[::1]:5", nil},
		{"udp://[::1]", "udp://[::1]:7766", nil},
		{"udp://", "", ErrBadTarget},
		{"host:0", "", ErrBadTarget},
		{"host:70000", "", ErrBadTarget},
		{"host:http", "", ErrBadTarget},
		{"[::1", "", ErrBadTarget},
		{"ftp://host", "", ErrBadTarget},
		{"a b", "", ErrBadTarget},
		{"tcp://host:1", "tcp://host:1", nil},
		{"tcp://[::1]", "tcp://[::1]:7766", nil},
		{"unix:///tmp/x", "unix:///tmp/x", nil},
		{"unixgram:///run/v.sock", "unixgram:///run/v.sock", nil},
		{"unix://relative", "", ErrBadTarget},
		{"dbus:unix:path=/run/bus", "dbus:unix:path=/run/bus", nil},
		{"dbus://session", "dbus://session", nil},
		{"dbus://system/", "dbus://system", nil},
		{"dbus://session#org.example.Other", "dbus://session#org.example.Other", nil},
		{"dbus://bus", "", ErrBadTarget},
		{"dbus:nocolon", "", ErrBadTarget},
		{"stamp://router", "stamp://router:862", nil},
		{"stamp://192.0.2.1:8620", "stamp://192.0.2.1:8620", nil},
		{"stamp://", "", ErrBadTarget},
		{"echo://[::1]", "echo://[::1]:7", nil},
		{"echo://host:7007", "echo://host:7007", nil},
		{"connect://host:443", "connect://host:443", nil},
		{"connect://[::1]:22", "connect://[::1]:22", nil},
		{"connect://host", "", ErrBadTarget},
		{"connect://[::1]", "", ErrBadTarget},
		{"connect://", "", ErrBadTarget},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseTarget(tt.in)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("ParseTarget(%q) = %v, %v, want error %v", tt.in, got, err, tt.wantErr)
				}
				return
			}
			if err != nil || got.String() != tt.want {
				t.Fatalf("ParseTarget(%q) = %v, %v, want %s", tt.in, got, err, tt.want)
			}
		})
	}
}

// TestParseTargetForeign: the foreign schemes name themselves, and the
// errors say what was wrong: connect:// without its port, a scheme not
// known (listing the foreign ones too).
func TestParseTargetForeign(t *testing.T) {
	for _, tt := range []struct {
		in, scheme string
		foreign    bool
	}{
		{"stamp://h", "stamp", true}, {"echo://h", "echo", true}, {"connect://h:1", "connect", true},
		{"udp://h", "udp", false}, {"h", "udp", false}, {"tcp://h", "tcp", false},
	} {
		got, err := ParseTarget(tt.in)
		if err != nil || got.Scheme != tt.scheme || got.Foreign() != tt.foreign {
			t.Errorf("ParseTarget(%q) = %+v (foreign %t), %v, want scheme %s, foreign %t", tt.in, got, got.Foreign(), err, tt.scheme, tt.foreign)
		}
	}
	for in, want := range map[string]string{
		"connect://host": "no port (want connect://HOST:PORT",
		"stamp://":       "no host (want stamp://HOST[:PORT])",
		"gopher://host":  "stamp://, echo:// or connect://",
	} {
		if _, err := ParseTarget(in); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseTarget(%q) = %v, want an error with %q", in, err, want)
		}
	}
}

// TestDialEcho: an echo:// target is dialed as UDP, and its socket
// carries the bytes both ways.
func TestDialEcho(t *testing.T) {
	l, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	port := l.LocalAddr().(*net.UDPAddr).Port
	c, err := Dial(context.Background(), Target{Scheme: "echo", Host: "127.0.0.1", Port: port})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if got := c.RemoteAddr().Network(); got != "udp" {
		t.Fatalf("echo:// dialed over %s, want udp", got)
	}
	if _, err := c.Write([]byte("hello")); err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 16)
	l.SetReadDeadline(time.Now().Add(5 * time.Second))
	n, from, err := l.ReadFromUDP(b)
	if err != nil || string(b[:n]) != "hello" {
		t.Fatalf("the service read %q, %v, want hello", b[:n], err)
	}
	if _, err := Dial(context.Background(), Target{Scheme: "connect", Host: "127.0.0.1", Port: from.Port}); !errors.Is(err, ErrUnsupportedScheme) {
		t.Errorf("Dial(connect://) = %v, want %v (each probe is its own connection)", err, ErrUnsupportedScheme)
	}
}

func TestDialRefused(t *testing.T) {
	// A port that was just free: nothing listens there.
	l, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	addr := l.LocalAddr().(*net.UDPAddr)
	l.Close()
	c, err := Dial(context.Background(), Target{Scheme: "udp", Host: "127.0.0.1", Port: addr.Port})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write(make([]byte, 8)); err != nil {
		t.Fatal(err)
	}
	c.SetReadDeadline(time.Now().Add(2 * time.Second))
	_, err = c.Read(make([]byte, 8))
	if !IsPeerGone(err) {
		t.Fatalf("Read from a closed port = %v, want connection refused", err)
	}
}

// TestErrorKinds: IsPeerGone and IsSlowReader know their errors however
// wrapped, and only those.
func TestErrorKinds(t *testing.T) {
	op := func(err error) error {
		return &net.OpError{Op: "read", Net: "udp", Err: os.NewSyscallError("recvmsg", err)}
	}
	tests := []struct {
		name           string
		err            error
		gone, slowRead bool
	}{
		{"port closed", op(syscall.ECONNREFUSED), true, false},
		{"stream ended", fmt.Errorf("read frame: %w", io.EOF), true, false},
		{"stream reset", op(syscall.ECONNRESET), true, false},
		{"stream closed under a write", op(syscall.EPIPE), true, false},
		{"timeout", os.ErrDeadlineExceeded, false, false},
		{"unexpected EOF", io.ErrUnexpectedEOF, false, false},
		{"slow stream reader", fmt.Errorf("reply: %w", stream.ErrSlowReader), false, true},
		{"slow datagram reader", unixgram.ErrSlowReader, false, true},
		{"none", nil, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := IsPeerGone(tt.err); got != tt.gone {
				t.Errorf("IsPeerGone(%v) = %v, want %v", tt.err, got, tt.gone)
			}
			if got := IsSlowReader(tt.err); got != tt.slowRead {
				t.Errorf("IsSlowReader(%v) = %v, want %v", tt.err, got, tt.slowRead)
			}
		})
	}
}

// TestListenRoundTrip: what a client sends, the reflector's socket reads
// with the client's address, and its reply to that address is what the
// client reads, over each transport.
func TestListenRoundTrip(t *testing.T) {
	for _, scheme := range []string{"udp", "tcp", "unix", "unixgram"} {
		t.Run(scheme, func(t *testing.T) {
			p, target := listenAt(scheme, "127.0.0.1:0")(t)
			defer p.Close()
			c, err := Dial(context.Background(), target)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if _, err := c.Write([]byte("ping")); err != nil {
				t.Fatal(err)
			}
			buf := make([]byte, 16)
			p.SetReadDeadline(time.Now().Add(2 * time.Second))
			n, from, err := p.ReadFrom(buf)
			if err != nil || string(buf[:n]) != "ping" {
				t.Fatalf("ReadFrom = %q, %v, want ping", buf[:n], err)
			}
			if _, err := p.WriteTo([]byte("pong"), from); err != nil {
				t.Fatal(err)
			}
			c.SetReadDeadline(time.Now().Add(2 * time.Second))
			n, err = c.Read(buf)
			if err != nil || string(buf[:n]) != "pong" {
				t.Fatalf("Read = %q, %v, want pong", buf[:n], err)
			}
		})
	}
}

// TestListenQuickAck: a TCP listener asks ListenOptions.QuickAck of every
// message it reads, the message itself, before the message is read from
// it; without QuickAck the messages come as well.
func TestListenQuickAck(t *testing.T) {
	sent := []string{"one", "two", "three"}
	for _, on := range []bool{true, false} {
		t.Run(fmt.Sprintf("quickack %v", on), func(t *testing.T) {
			asked := make(chan string, len(sent))
			o := ListenOptions{Socket: sockopt.Options{TOS: -1}}
			if on {
				o.QuickAck = func(msg []byte) bool { asked <- string(msg); return true }
			}
			p, err := ListenStreamWith("tcp", "127.0.0.1:0", o)
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			c, err := Dial(context.Background(), Target{Scheme: "tcp", Host: "127.0.0.1", Port: p.LocalAddr().(*net.TCPAddr).Port})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			buf := make([]byte, 16)
			for _, m := range sent {
				if _, err := c.Write([]byte(m)); err != nil {
					t.Fatal(err)
				}
				p.SetReadDeadline(time.Now().Add(2 * time.Second))
				n, _, err := p.ReadFrom(buf)
				if err != nil || string(buf[:n]) != m {
					t.Fatalf("ReadFrom = %q, %v, want %q", buf[:n], err, m)
				}
				if !on {
					continue
				}
				select {
				case got := <-asked:
					if got != m {
						t.Fatalf("QuickAck asked of %q, want %q", got, m)
					}
				default:
					t.Fatalf("QuickAck not asked of %q before it was read", m)
				}
			}
		})
	}
}

// TestGrantedUnsupported: a connection without a socket behind it has no
// granted options to read.
func TestGrantedUnsupported(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	if g, err := Granted(a); !errors.Is(err, errors.ErrUnsupported) {
		t.Fatalf("Granted(pipe) = %+v, %v, want %v", g, err, errors.ErrUnsupported)
	}
}

// listenAt returns a function that opens a reflector's socket of scheme
// on addr (a fresh path for the Unix ones) and the target that reaches it.
func listenAt(scheme, addr string) func(t *testing.T) (PacketConn, Target) {
	return func(t *testing.T) (PacketConn, Target) {
		t.Helper()
		var l PacketConn
		var err error
		switch scheme {
		case "udp":
			l, err = ListenUDP(addr)
		case "tcp":
			l, err = ListenStream("tcp", addr)
		case "unix":
			addr = filepath.Join(testsock.ShortDir(t), "s")
			l, err = ListenStream("unix", addr)
		case "unixgram":
			addr = filepath.Join(testsock.ShortDir(t), "s")
			l, err = ListenUnixgram(addr)
		}
		if err != nil {
			t.Fatal(err)
		}
		if scheme == "unix" || scheme == "unixgram" {
			return l, Target{Scheme: scheme, Path: addr}
		}
		ap := l.LocalAddr().(interface{ AddrPort() netip.AddrPort }).AddrPort()
		return l, Target{Scheme: scheme, Host: ap.Addr().String(), Port: int(ap.Port())}
	}
}
