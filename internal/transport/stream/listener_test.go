package stream

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/volley-net/volley/internal/quota"
)

// echoHandler answers every message with itself, admits a peer to a
// session when its message starts with 'A' and to large messages when it
// starts with 'L', and answers refusals with "no" and the reason.
type echoHandler struct {
	room atomic.Int64
	at   atomic.Int64 // the last message's
}

func (h *echoHandler) Handle(msg []byte, from netip.AddrPort, at int64) ([]byte, time.Duration, Admission) {
	h.at.Store(at)
	var hold time.Duration
	if len(msg) > 2 && msg[1] == 'H' {
		hold = time.Duration(msg[2]) * 10 * time.Millisecond
	}
	admit := AdmitNone
	switch {
	case len(msg) > 0 && msg[0] == 'A':
		admit = AdmitSession
	case len(msg) > 0 && msg[0] == 'L':
		admit = AdmitLarge
	}
	return msg, hold, admit
}

// Send marks a held reply as sent through it.
func (h *echoHandler) Send(reply []byte, to netip.AddrPort) { reply[1] = 'S' }

func (h *echoHandler) Drop(why error) {}

func (h *echoHandler) Gone(from netip.AddrPort) {}

func (h *echoHandler) Room(msg []byte) int { return int(h.room.Load()) }

func (h *echoHandler) Refuse(msg []byte, from netip.AddrPort, why Refusal) []byte {
	return append(msg[:0], 'n', 'o', byte(why))
}

func listen(t *testing.T, lim Limits, h Handler) *Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := Serve(ln, lim)
	l.SetHandler(h)
	t.Cleanup(func() { l.Close() })
	return l
}

func dial(t *testing.T, l *Listener) *Conn {
	t.Helper()
	c, err := Dial("tcp", l.LocalAddr().String(), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	return c
}

// roundTrip sends msg on c and returns the answer.
func roundTrip(t *testing.T, c *Conn, msg string) string {
	t.Helper()
	if _, err := c.Write([]byte(msg)); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 1<<20)
	n, err := c.Read(buf)
	if err != nil {
		t.Fatalf("answer to %q: %v", msg, err)
	}
	return string(buf[:n])
}

// waitClosed waits for the listener to close c: a read ends with EOF or
// a reset, not with c's deadline.
func waitClosed(t *testing.T, c *Conn, within time.Duration) {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(within))
	buf := make([]byte, MaxMessage)
	for {
		_, err := c.Read(buf)
		if err == nil {
			continue
		}
		if errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("connection still open after %s", within)
		}
		return // EOF, or reset
	}
}

// TestSlowReaderStallsNoOne: a peer that never reads gets its replies
// queued up to the bound, then refused as a slow reader, while WriteTo
// never waits and another peer's round trips go on; after SendTimeout
// without progress its connection is closed, and its memory given back.
func TestSlowReaderStallsNoOne(t *testing.T) {
	mem := quota.NewMemory(64<<20, 64<<20)
	l := listen(t, Limits{SendTimeout: 300 * time.Millisecond, Memory: mem}, &echoHandler{})
	stalled := dial(t, l)
	if got := roundTrip(t, stalled, "A stalled"); got != "A stalled" {
		t.Fatalf("echo = %q", got)
	}
	other := dial(t, l)
	stalledAddr := netip.MustParseAddrPort(stalled.LocalAddr().String())
	// Replies for it, as held replies come, until the socket buffers
	// are full, a write stalls for SendTimeout and the connection is
	// closed; all the while, the other peer's round trips go on.
	big := make([]byte, 512<<10)
	slow := 0
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, err := l.WriteTo(big, stalledAddr)
		if errors.Is(err, net.ErrClosed) {
			break // closed
		}
		if errors.Is(err, ErrSlowReader) {
			slow++
		} else if err != nil {
			t.Fatalf("WriteTo = %v, want nil, ErrSlowReader or ErrClosed", err)
		}
		if got := roundTrip(t, other, "A other"); got != "A other" {
			t.Fatalf("the other peer's echo = %q", got)
		}
		if time.Now().After(deadline) {
			t.Fatal("the stalled peer's connection is still open 10s after its replies began; want it closed after SendTimeout")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if slow == 0 {
		t.Fatal("no WriteTo said ErrSlowReader for a peer that reads nothing")
	}
	waitClosed(t, stalled, 5*time.Second)
	for {
		if used, _ := mem.Used(); used < 64<<10 {
			break
		}
		if time.Now().After(deadline) {
			used, _ := mem.Used()
			t.Fatalf("%d bytes still taken of the budget after the stalled peer was closed", used)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestHandshakeLimits: before it is admitted, a peer may send only small
// messages, and only for HandshakeTimeout; a declared length costs
// nothing until its bytes come.
func TestHandshakeLimits(t *testing.T) {
	mem := quota.NewMemory(64<<20, 64<<20)
	l := listen(t, Limits{HandshakeMessage: 100, HandshakeTimeout: 300 * time.Millisecond, Memory: mem}, &echoHandler{})

	t.Run("large before admission", func(t *testing.T) {
		c := dial(t, l)
		var hdr [4]byte
		binary.BigEndian.PutUint32(hdr[:], 4<<20)
		if _, err := c.Conn.Write(hdr[:]); err != nil {
			t.Fatal(err)
		}
		waitClosed(t, c, 5*time.Second)
	})
	t.Run("idle before admission", func(t *testing.T) {
		c := dial(t, l)
		if got := roundTrip(t, c, "hello"); got != "hello" {
			t.Fatalf("echo = %q", got)
		}
		waitClosed(t, c, 5*time.Second)
	})
	t.Run("admitted", func(t *testing.T) {
		c := dial(t, l)
		if got := roundTrip(t, c, "A hello"); got != "A hello" {
			t.Fatalf("echo = %q", got)
		}
		// Past the handshake timeout, and larger than its limit.
		time.Sleep(400 * time.Millisecond)
		msg := "A" + string(make([]byte, 1000))
		if got := roundTrip(t, c, msg); got != msg {
			t.Fatalf("echo of %d bytes = %d bytes", len(msg), len(got))
		}
	})
	t.Run("large, no session", func(t *testing.T) {
		// Past its handshake but in no session: large messages, and the
		// handshake timeout still.
		c := dial(t, l)
		if got := roundTrip(t, c, "L small"); got != "L small" {
			t.Fatalf("echo = %q", got)
		}
		msg := "L" + string(make([]byte, 1000))
		if got := roundTrip(t, c, msg); got != msg {
			t.Fatalf("echo of %d bytes = %d bytes", len(msg), len(got))
		}
		waitClosed(t, c, 5*time.Second)
	})
	t.Run("declared length", func(t *testing.T) {
		c := dial(t, l)
		if got := roundTrip(t, c, "A hello"); got != "A hello" {
			t.Fatal(got)
		}
		before, _ := mem.Used()
		var hdr [4]byte
		binary.BigEndian.PutUint32(hdr[:], 4<<20)
		if _, err := c.Conn.Write(append(hdr[:], make([]byte, 1000)...)); err != nil {
			t.Fatal(err)
		}
		time.Sleep(100 * time.Millisecond)
		if used, _ := mem.Used(); used-before > 8<<10 {
			t.Fatalf("a declared 4 MiB with 1000 bytes sent took %d bytes of the budget", used-before)
		}
	})
}

// TestIdleTimeout: an admitted peer that sends nothing for IdleTimeout is
// closed; one that keeps sending is not.
func TestIdleTimeout(t *testing.T) {
	l := listen(t, Limits{IdleTimeout: 300 * time.Millisecond}, &echoHandler{})
	busy, idle := dial(t, l), dial(t, l)
	roundTrip(t, idle, "A idle")
	for range 6 {
		roundTrip(t, busy, "A busy")
		time.Sleep(100 * time.Millisecond)
	}
	waitClosed(t, idle, 5*time.Second)
	roundTrip(t, busy, "A still here")
}

// TestConnLimits: connections beyond the per-source cap are refused with
// the Handler's answer to their first message, and the cap is counted
// again once connections close.
func TestConnLimits(t *testing.T) {
	h := &echoHandler{}
	l := listen(t, Limits{MaxConns: 10, MaxConnsPerSource: 2}, h)
	a, b := dial(t, l), dial(t, l)
	roundTrip(t, a, "A a")
	roundTrip(t, b, "A b")
	c := dial(t, l)
	if got := roundTrip(t, c, "hello"); got != "no"+string(rune(RefusedSourceConns)) {
		t.Fatalf("third connection from one address got %q, want the refusal", got)
	}
	waitClosed(t, c, 5*time.Second)
	a.Close()
	deadline := time.Now().Add(5 * time.Second)
	for {
		d := dial(t, l)
		if got := roundTrip(t, d, "A d"); got == "A d" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("a closed connection's place was not given back")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestRoomBudget: a reply larger than its message grows the buffer from
// the budget; one the budget cannot hold is refused with the reason.
func TestRoomBudget(t *testing.T) {
	mem := quota.NewMemory(1<<20, 1<<20)
	h := &echoHandler{}
	h.room.Store(2 << 20)
	l := listen(t, Limits{Memory: mem}, h)
	c := dial(t, l)
	roundTrip(t, c, "A admit me") // Room is asked of admitted peers only
	if got := roundTrip(t, c, "A big"); got != "no"+string(rune(RefusedMemory)) {
		t.Fatalf("a reply beyond the budget: got %q, want the refusal", got)
	}
	h.room.Store(512 << 10)
	if got := roundTrip(t, c, "A small"); got != "A small" {
		t.Fatalf("echo = %q", got)
	}
	if used, _ := mem.Used(); used < 512<<10 {
		t.Fatalf("budget used %d, want the reply's room", used)
	}
}

// TestHeldReplies: a held reply leaves when it is due, after Send, by due
// time whatever the order it came in, and never holds up a reply that
// is not held.
func TestHeldReplies(t *testing.T) {
	l := listen(t, Limits{}, &echoHandler{})
	c := dial(t, l)
	roundTrip(t, c, "A admit")
	start := time.Now()
	for _, m := range []string{"AH\x0athird", "AH\x05second", "A-first"} {
		if _, err := c.Write([]byte(m)); err != nil {
			t.Fatal(err)
		}
	}
	buf := make([]byte, 64)
	var got []string
	for range 3 {
		n, err := c.Read(buf)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, string(buf[:n]))
	}
	want := []string{"A-first", "AS\x05second", "AS\x0athird"}
	if fmt.Sprintf("%q", got) != fmt.Sprintf("%q", want) {
		t.Fatalf("replies %q, want %q", got, want)
	}
	if took := time.Since(start); took < 100*time.Millisecond {
		t.Fatalf("the 100ms-held reply came after %s", took)
	}
}

// TestEmptyMessage: a message of no bytes, before or after the
// handshake, is the Handler's to judge; it crashes nothing.
func TestEmptyMessage(t *testing.T) {
	l := listen(t, Limits{}, &echoHandler{})
	for _, admit := range []bool{false, true} {
		c := dial(t, l)
		if admit {
			roundTrip(t, c, "A admit")
		}
		if _, err := c.Conn.Write([]byte{0, 0, 0, 0}); err != nil {
			t.Fatal(err)
		}
		if got := roundTrip(t, c, "A after"); got != "" && got != "A after" {
			t.Fatalf("after an empty message: %q", got)
		}
	}
}

// TestOutOfSession: only a session's messages keep a connection. One
// that leaves its session has the handshake timeout to open another,
// however often it sends other messages, and makes room meanwhile.
func TestOutOfSession(t *testing.T) {
	l := listen(t, Limits{HandshakeTimeout: 300 * time.Millisecond, IdleTimeout: 10 * time.Second}, &echoHandler{})
	c := dial(t, l)
	roundTrip(t, c, "A in a session")
	start := time.Now()
	for time.Since(start) < 3*time.Second {
		if _, err := c.Write([]byte("L out of it")); err != nil {
			return // closed
		}
		c.SetReadDeadline(time.Now().Add(time.Second))
		if _, err := c.Read(make([]byte, 64)); err != nil {
			if errors.Is(err, os.ErrDeadlineExceeded) {
				t.Fatal("no answer, and not closed")
			}
			return // closed: what it should be
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatal("a connection out of its session, sending every 100ms, still open after 3s with a 300ms handshake timeout")
}
