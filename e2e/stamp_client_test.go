//go:build linux

package e2e

import (
	"bytes"
	"encoding/binary"
	"errors"
	"net"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"

	"golang.org/x/sys/unix"
)

// `volley client stamp://` against a stateful STAMP Session-Reflector
// written here from RFC 8762's layout (the offsets are stampPlain's and
// stampAuth's in stamp_server_test.go; none of package stamp's code), which
// drops requests and replies on a schedule of its own: the client's loss
// per direction must equal what it dropped.

// stampReflector is the test's Session-Reflector: stateful, it numbers
// the requests it answers from 0, and drops every dropUp-th request (not
// counted) and every dropDown-th reply it numbered (counted, not sent).
type stampReflector struct {
	c                *net.UDPConn
	l                stampLayout
	key              []byte
	dropUp, dropDown uint32

	droppedUp, droppedDown, sent atomic.Uint64
	ttl                          atomic.Uint32 // the last request's, from IP_RECVTTL
	wg                           sync.WaitGroup
}

func newStampReflector(t *testing.T, key []byte, dropUp, dropDown uint32) *stampReflector {
	t.Helper()
	c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	rc, _ := c.SyscallConn()
	var serr error
	rc.Control(func(fd uintptr) { serr = unix.SetsockoptInt(int(fd), unix.IPPROTO_IP, unix.IP_RECVTTL, 1) })
	if serr != nil {
		t.Fatalf("IP_RECVTTL: %v", serr)
	}
	r := &stampReflector{c: c, l: stampPlain, key: key, dropUp: dropUp, dropDown: dropDown}
	if key != nil {
		r.l = stampAuth
	}
	r.wg.Add(1)
	go r.serve()
	t.Cleanup(func() {
		c.Close()
		r.wg.Wait()
	})
	return r
}

// serve answers until the socket closes.
func (r *stampReflector) serve() {
	defer r.wg.Done()
	buf, oob := make([]byte, 2048), make([]byte, 128)
	var next uint32 // the reflector's sequence number
	for {
		n, oobn, _, from, err := r.c.ReadMsgUDP(buf, oob)
		if errors.Is(err, net.ErrClosed) {
			return
		}
		if err != nil || n < r.l.size {
			continue
		}
		t2 := ntpNow()
		req := buf[:n]
		if r.key != nil && !bytes.Equal(stampMAC(r.key, req), req[96:112]) {
			continue
		}
		if seq := binary.BigEndian.Uint32(req); seq%r.dropUp == r.dropUp-1 {
			r.droppedUp.Add(1)
			continue
		}
		ttl := recvTTL(oob[:oobn])
		r.ttl.Store(uint32(ttl))
		rep := make([]byte, n) // a reply the size of the request
		copy(rep[r.l.size:], req[r.l.size:])
		binary.BigEndian.PutUint32(rep[0:], next)
		binary.BigEndian.PutUint16(rep[r.l.rErr:], 0x0001)
		copy(rep[r.l.rSSID:r.l.rSSID+2], req[r.l.ssid:r.l.ssid+2])
		binary.BigEndian.PutUint64(rep[r.l.rT2:], t2)
		copy(rep[r.l.sSeq:r.l.sSeq+4], req[0:4])
		copy(rep[r.l.sT1:r.l.sT1+8], req[r.l.t1:r.l.t1+8])
		copy(rep[r.l.sErr:r.l.sErr+2], req[r.l.err:r.l.err+2])
		rep[r.l.ttl] = ttl
		binary.BigEndian.PutUint64(rep[r.l.rT3:], ntpNow())
		if r.key != nil {
			copy(rep[96:], stampMAC(r.key, rep))
		}
		next++
		if next%r.dropDown == 0 {
			r.droppedDown.Add(1)
			continue
		}
		if _, err := r.c.WriteToUDP(rep, from); err == nil {
			r.sent.Add(1)
		}
	}
}

// recvTTL reads the IP_TTL control message, 0 without one.
func recvTTL(oob []byte) uint8 {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return 0
	}
	for _, m := range msgs {
		if m.Header.Level == unix.IPPROTO_IP && m.Header.Type == unix.IP_TTL && len(m.Data) >= 1 {
			return m.Data[0]
		}
	}
	return 0
}

// TestSTAMPClient: volley's Session-Sender measures a reflector it did not
// write, in both modes; with --stamp-stateful its loss up and down equal
// the reflector's drops exactly, every reply gives up and down delays,
// and the TTL the reflector saw comes back.
func TestSTAMPClient(t *testing.T) {
	keyFile := filepath.Join(t.TempDir(), "stamp.key")
	key := []byte("stamp client sesame")
	if err := os.WriteFile(keyFile, append(key, '\n'), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, mode := range []struct {
		name string
		key  []byte
		args []string
	}{
		{"unauthenticated", nil, nil},
		{"authenticated", key, []string{"--key-file", keyFile}},
	} {
		t.Run(mode.name, func(t *testing.T) {
			r := newStampReflector(t, mode.key, 7, 11)
			args := append([]string{"client", "stamp://" + r.c.LocalAddr().String(), "-n", "300", "--rate", "1000",
				"--stamp-stateful", "--ttl", "61", "--format", "json"}, mode.args...)
			run := volleyRun(t, args...)
			if run.code != 0 {
				t.Fatalf("exit %d: %s", run.code, run.stderr)
			}
			res := parseResult(t, run.stdout)
			c, up, down := res.Summary.Counts, r.droppedUp.Load(), r.droppedDown.Load()
			if c.Sent != 300 || c.LostUp != up || c.LostDown != down || c.Received != r.sent.Load() {
				t.Errorf("sent %d, received %d, lost up %d, down %d; the reflector dropped %d up, %d down and sent %d",
					c.Sent, c.Received, c.LostUp, c.LostDown, up, down, r.sent.Load())
			}
			if res.Config.Size != r.l.size {
				t.Errorf("config.size %d, want the mode's base packet, %d bytes", res.Config.Size, r.l.size)
			}
			if up == 0 || down == 0 {
				t.Errorf("the reflector dropped %d up and %d down: the test drops both", up, down)
			}
			p := res.Config.Peer
			if p == nil || p.Protocol != "stamp" || !p.Directions || !p.OneWay || p.STAMP == nil ||
				p.STAMP.Authenticated != (mode.key != nil) || !p.STAMP.Stateful {
				t.Fatalf("peer %+v: want a stateful STAMP peer, authenticated %v", p, mode.key != nil)
			}
			said := res.PeerResults
			if said == nil || said.STAMP == nil {
				t.Fatalf("peer results %+v: want a STAMP reflector's", said)
			}
			if said.STAMP.SenderTTL != 61 || r.ttl.Load() != 61 {
				t.Errorf("sender TTL %d in the result, %d at the reflector: want 61 (--ttl)", said.STAMP.SenderTTL, r.ttl.Load())
			}
			if s, n := res.Summary, int64(c.Received); s.Up.Count != n || s.Down.Count != n || s.Response.Count != n {
				t.Errorf("up %d, down %d, response %d delays for %d replies", s.Up.Count, s.Down.Count, s.Response.Count, c.Received)
			}
			if e := said.STAMP.ErrorEstimate; e.Raw != 0x0001 || e.Synchronized {
				t.Errorf("error estimate %+v, want the reflector's raw 0x0001, not synchronized", e)
			}
		})
	}
}

// TestSTAMPClientServer: volley's Session-Sender and Session-Reflector
// together, authenticated and stateful: nothing lost, every direction
// measured, the TTL sent seen at the reflector.
func TestSTAMPClientServer(t *testing.T) {
	keyFile := filepath.Join(t.TempDir(), "stamp.key")
	if err := os.WriteFile(keyFile, []byte("both ends\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	srv := startServer(t, "127.0.0.1:0", "-q", "--stamp", "127.0.0.1:0", "--stamp-key-file", keyFile)
	run := volleyRun(t, "client", "stamp://"+stampAddress(t, srv), "-n", "200", "--rate", "1000", "--stamp-stateful",
		"--key-file", keyFile, "--format", "json")
	if run.code != 0 {
		t.Fatalf("exit %d: %s", run.code, run.stderr)
	}
	res := parseResult(t, run.stdout)
	if c := res.Summary.Counts; c.Sent != 200 || c.Received != 200 || c.Lost != 0 || c.Errors != 0 {
		t.Errorf("counts %+v, want 200 sent and received", c)
	}
	p, said := res.Config.Peer, res.PeerResults
	if p == nil || p.STAMP == nil || !p.STAMP.Authenticated || said == nil || said.STAMP == nil ||
		said.STAMP.SenderTTL == 0 || said.STAMP.Renumbered != 0 {
		t.Errorf("peer %+v, said %+v: want authenticated, the reflector's TTL, no renumbering (its count is the sender's with no loss)", p, said)
	}
	if err := srv.stop(t, os.Interrupt); err != nil {
		t.Fatalf("server: %v", err)
	}
	if answered, drops := stampTotals(t, srv); answered != 200 || len(drops) != 0 {
		t.Errorf("the server answered %d, dropped %v: want 200, none", answered, drops)
	}
}
