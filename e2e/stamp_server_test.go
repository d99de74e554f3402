//go:build linux

package e2e

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// `volley server --stamp` against a STAMP Session-Sender written here from
// RFC 8762's packet layout (§4.2, §4.3; RFC 8972 §3's SSID), with byte
// offsets of its own: none of package stamp's code.

// The offsets of a mode's fields: the sender's packet and the reflector's.
type stampLayout struct {
	size                                   int
	t1, err, ssid                          int // the sender's
	rT3, rErr, rSSID, rT2, sSeq, sT1, sErr int // the reflector's
	ttl                                    int
}

var (
	// Unauthenticated: 44 bytes each way.
	stampPlain = stampLayout{size: 44, t1: 4, err: 12, ssid: 14,
		rT3: 4, rErr: 12, rSSID: 14, rT2: 16, sSeq: 24, sT1: 28, sErr: 36, ttl: 40}
	// Authenticated: 112 bytes, the HMAC-SHA-256 of the first 96 in the
	// last 16.
	stampAuth = stampLayout{size: 112, t1: 16, err: 24, ssid: 26,
		rT3: 16, rErr: 24, rSSID: 26, rT2: 32, sSeq: 48, sT1: 64, sErr: 72, ttl: 80}
)

// ntpNow is the time now in NTP's 64-bit format.
func ntpNow() uint64 {
	ns := time.Now().UnixNano()
	sec := uint64(ns/1e9) + 2208988800
	frac := (uint64(ns%1e9) << 32) / 1e9
	return sec<<32 | frac
}

// stampMAC is HMAC-SHA-256 of b's first 96 bytes, truncated to 16.
func stampMAC(key, b []byte) []byte {
	h := hmac.New(sha256.New, key)
	h.Write(b[:96])
	return h.Sum(nil)[:16]
}

// stampSender is a Session-Sender: a UDP socket sending with TTL 42.
type stampSender struct {
	c   *net.UDPConn
	l   stampLayout
	key []byte
}

const stampTestTTL = 42

func newStampSender(t *testing.T, addr string, key []byte) *stampSender {
	t.Helper()
	ua, err := net.ResolveUDPAddr("udp", addr)
	if err != nil {
		t.Fatal(err)
	}
	c, err := net.DialUDP("udp", nil, ua)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	rc, err := c.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var serr error
	if err := rc.Control(func(fd uintptr) {
		if ua.IP.To4() == nil {
			serr = syscall.SetsockoptInt(int(fd), syscall.IPPROTO_IPV6, syscall.IPV6_UNICAST_HOPS, stampTestTTL)
		} else {
			serr = syscall.SetsockoptInt(int(fd), syscall.IPPROTO_IP, syscall.IP_TTL, stampTestTTL)
		}
	}); err != nil || serr != nil {
		t.Fatalf("IP_TTL, IPV6_UNICAST_HOPS: %v %v", err, serr)
	}
	s := &stampSender{c: c, l: stampPlain, key: key}
	if key != nil {
		s.l = stampAuth
	}
	return s
}

// packet returns a Session-Sender packet of seq, its T1 now.
func (s *stampSender) packet(seq uint32, ssid, errEst uint16) []byte {
	b := make([]byte, s.l.size)
	binary.BigEndian.PutUint32(b[0:], seq)
	binary.BigEndian.PutUint64(b[s.l.t1:], ntpNow())
	binary.BigEndian.PutUint16(b[s.l.err:], errEst)
	binary.BigEndian.PutUint16(b[s.l.ssid:], ssid)
	if s.key != nil {
		copy(b[96:], stampMAC(s.key, b))
	}
	return b
}

// recv returns the next reply, or nil after wait without one.
func (s *stampSender) recv(t *testing.T, wait time.Duration) []byte {
	t.Helper()
	s.c.SetReadDeadline(time.Now().Add(wait))
	buf := make([]byte, 2048)
	n, err := s.c.Read(buf)
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return buf[:n]
}

// check checks the reply to req, the i-th of a session; stateful, the
// reflector's sequence number is i, else the sender's.
func (s *stampSender) check(t *testing.T, req, rep []byte, i uint32, stateful bool) {
	t.Helper()
	l, be := s.l, binary.BigEndian
	if len(rep) != len(req) {
		t.Fatalf("reply %d: %d bytes to a request of %d", i, len(rep), len(req))
	}
	if s.key != nil && !hmac.Equal(rep[96:], stampMAC(s.key, rep)) {
		t.Fatalf("reply %d: its HMAC does not match", i)
	}
	seq := be.Uint32(req)
	if stateful {
		seq = i
	}
	t1, t2, t3 := be.Uint64(req[l.t1:]), be.Uint64(rep[l.rT2:]), be.Uint64(rep[l.rT3:])
	switch {
	case be.Uint32(rep) != seq:
		t.Errorf("reply %d: sequence number %d, want %d (stateful %v)", i, be.Uint32(rep), seq, stateful)
	case be.Uint32(rep[l.sSeq:]) != be.Uint32(req) || be.Uint64(rep[l.sT1:]) != t1 || be.Uint16(rep[l.sErr:]) != be.Uint16(req[l.err:]):
		t.Errorf("reply %d: the sender's sequence, T1 or error estimate not echoed: % x", i, rep)
	case be.Uint16(rep[l.rSSID:]) != be.Uint16(req[l.ssid:]):
		t.Errorf("reply %d: SSID %d, want the sender's %d", i, be.Uint16(rep[l.rSSID:]), be.Uint16(req[l.ssid:]))
	case rep[l.rErr+1] == 0:
		t.Errorf("reply %d: the reflector's error estimate %#04x has a zero multiplier (RFC 4656 forbids it)", i, be.Uint16(rep[l.rErr:]))
	case rep[l.ttl] != stampTestTTL:
		t.Errorf("reply %d: the sender's TTL echoed as %d, want %d", i, rep[l.ttl], stampTestTTL)
	case !(t1 <= t2 && t2 <= t3):
		t.Errorf("reply %d: T1 %x, T2 %x, T3 %x: want T1 <= T2 <= T3", i, t1, t2, t3)
	}
}

// stampAddress waits for the server's "listening on stamp://" line and
// returns its address.
func stampAddress(t *testing.T, s *server) string {
	t.Helper()
	re := regexp.MustCompile(`listening on stamp://(\S+)\n`)
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		s.mu.Lock()
		m := re.FindStringSubmatch(s.out.String())
		s.mu.Unlock()
		if m != nil {
			return m[1]
		}
	}
	t.Fatal("the server printed no listening on stamp:// line within 10s")
	return ""
}

// stampTotals returns the server's STAMP totals line's answered count
// and drops by reason, once it has stopped.
func stampTotals(t *testing.T, s *server) (answered int, drops map[string]int) {
	t.Helper()
	out := s.output()
	m := regexp.MustCompile(`--- stamp totals over \S+: in \d+, answered (\d+), dropped \d+(?: \(([^)]*)\))?`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no STAMP totals line in:\n%s", out)
	}
	answered, _ = strconv.Atoi(m[1])
	drops = map[string]int{}
	for _, d := range strings.Split(m[2], ", ") {
		if name, n, ok := strings.Cut(d, " "); ok {
			drops[name], _ = strconv.Atoi(n)
		}
	}
	return answered, drops
}

// TestSTAMPServer: 100 packets in each mode, every reply checked; a wrong
// key gets no reply and is counted.
func TestSTAMPServer(t *testing.T) {
	keyFile := filepath.Join(t.TempDir(), "stamp.key")
	key := []byte("stamp sesame")
	if err := os.WriteFile(keyFile, append(key, '\n'), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, mode := range []struct {
		name     string
		key      []byte
		stateful bool
		args     []string
		host     string
	}{
		{"unauthenticated stateful", nil, true, nil, "127.0.0.1"},
		{"unauthenticated stateless", nil, false, []string{"--stamp-stateless"}, "127.0.0.1"},
		{"authenticated stateful", key, true, []string{"--stamp-key-file", keyFile}, "127.0.0.1"},
		{"authenticated stateless", key, false, []string{"--stamp-key-file", keyFile, "--stamp-stateless"}, "127.0.0.1"},
		{"IPv6 authenticated stateful", key, true, []string{"--stamp-key-file", keyFile}, "::1"},
	} {
		t.Run(mode.name, func(t *testing.T) {
			if mode.host == "::1" {
				c, err := net.ListenPacket("udp6", "[::1]:0")
				require(t, "ipv6", err)
				c.Close()
			}
			local := net.JoinHostPort(mode.host, "0")
			srv := startServer(t, local, append([]string{"-q", "--stamp", local}, mode.args...)...)
			s := newStampSender(t, stampAddress(t, srv), mode.key)
			for i := range uint32(100) {
				req := s.packet(5000+3*i, 77, 0x0001|uint16(i%4)<<8)
				if _, err := s.c.Write(req); err != nil {
					t.Fatal(err)
				}
				rep := s.recv(t, 5*time.Second)
				if rep == nil {
					t.Fatalf("no reply to packet %d", i)
				}
				s.check(t, req, rep, i, mode.stateful)
			}
			wrong := 0
			if mode.key != nil {
				// Signed with another key: dropped, never answered.
				bad := &stampSender{c: s.c, l: s.l, key: []byte("guess")}
				for i := range uint32(10) {
					if _, err := s.c.Write(bad.packet(i, 77, 1)); err != nil {
						t.Fatal(err)
					}
				}
				wrong = 10
				if rep := s.recv(t, 500*time.Millisecond); rep != nil {
					t.Errorf("a reply of %d bytes to a packet with a wrong HMAC", len(rep))
				}
			}
			if err := srv.stop(t, os.Interrupt); err != nil {
				t.Fatalf("server: %v", err)
			}
			answered, drops := stampTotals(t, srv)
			if answered != 100 || drops["auth"] != wrong {
				t.Errorf("answered %d, drops %v: want 100, and auth %d", answered, drops, wrong)
			}
		})
	}
}

// TestSTAMPServerRate: a sender over --max-rate gets fewer replies, and
// the rest are counted as rate drops.
func TestSTAMPServerRate(t *testing.T) {
	srv := startServer(t, "127.0.0.1:0", "-q", "--stamp", "127.0.0.1:0", "--max-rate", "10")
	s := newStampSender(t, stampAddress(t, srv), nil)
	for i := range uint32(100) {
		if _, err := s.c.Write(s.packet(i, 1, 1)); err != nil {
			t.Fatal(err)
		}
	}
	got := 0
	for s.recv(t, 500*time.Millisecond) != nil {
		got++
	}
	if err := srv.stop(t, os.Interrupt); err != nil {
		t.Fatalf("server: %v", err)
	}
	answered, drops := stampTotals(t, srv)
	if got == 0 || got >= 100 || got != answered || answered+drops["rate"] != 100 {
		t.Errorf("100 packets at once under --max-rate 10: %d replies, the server answered %d and dropped %v", got, answered, drops)
	}
}

// TestSTAMPServerAllow: a sender outside --allow gets nothing.
func TestSTAMPServerAllow(t *testing.T) {
	srv := startServer(t, "127.0.0.1:0", "-q", "--stamp", "127.0.0.1:0", "--allow", "192.0.2.0/24")
	s := newStampSender(t, stampAddress(t, srv), nil)
	for i := range uint32(5) {
		if _, err := s.c.Write(s.packet(i, 1, 1)); err != nil {
			t.Fatal(err)
		}
	}
	if rep := s.recv(t, 500*time.Millisecond); rep != nil {
		t.Errorf("a reply outside --allow")
	}
	if err := srv.stop(t, os.Interrupt); err != nil {
		t.Fatalf("server: %v", err)
	}
	if answered, drops := stampTotals(t, srv); answered != 0 || drops["refused"] != 5 {
		t.Errorf("answered %d, drops %v: want 0 and refused 5", answered, drops)
	}
}

// TestSTAMPServerSetup: --stamp's errors at start.
func TestSTAMPServerSetup(t *testing.T) {
	port := strconv.Itoa(freePort(t))
	r := setupRun(t, "--listen", "127.0.0.1:"+port, "--stamp", port)
	checkSetupFails(t, r, "--stamp :"+port, "--listen 127.0.0.1:"+port)
	r = setupRun(t, "--listen", "127.0.0.1:0", "--stamp-stateless")
	checkSetupFails(t, r, "--stamp-stateless: no STAMP listener")
	r = setupRun(t, "--listen", "127.0.0.1:0", "--stamp", "127.0.0.1:70000")
	checkSetupFails(t, r, "--stamp 127.0.0.1:70000: bad port")
}
