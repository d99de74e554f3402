package transport

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"
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
	if !IsRefused(err) {
		t.Fatalf("Read from a closed port = %v, want connection refused", err)
	}
}

func TestListenRoundTrip(t *testing.T) {
	p, err := ListenUDP("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	port := p.LocalAddr().(*net.UDPAddr).Port
	c, err := Dial(context.Background(), Target{Scheme: "udp", Host: "127.0.0.1", Port: port})
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
