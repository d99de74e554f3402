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
