package stream

import (
	"io"
	"net"
	"net/netip"
	"testing"
	"time"
)

// takeHandler is an echoHandler that takes a connection over on a message
// starting with 'T': Take echoes the raw bytes it reads until the peer
// closes or the listener does, then says so on gone.
type takeHandler struct {
	echoHandler
	taken chan netip.AddrPort
	gone  chan struct{}
}

func (h *takeHandler) Handle(msg []byte, from netip.AddrPort, _ int64) ([]byte, time.Duration, Admission) {
	if len(msg) > 0 && msg[0] == 'T' {
		return append(msg[:0], "ok"...), 0, AdmitTake
	}
	return h.echoHandler.Handle(msg, from, 0)
}

func (h *takeHandler) Take(c net.Conn, from netip.AddrPort) {
	defer func() { h.gone <- struct{}{} }()
	h.taken <- from
	buf := make([]byte, 64)
	for {
		_ = c.SetDeadline(time.Now().Add(10 * time.Second))
		n, err := c.Read(buf)
		if err != nil {
			return
		}
		if _, err := c.Write(buf[:n]); err != nil {
			return
		}
	}
}

var _ Taker = (*takeHandler)(nil)

// TestTake: after a message the Handler admits with AdmitTake, its reply
// goes framed, then the connection carries raw bytes for the Handler's
// Take, keeps its place in the limits meanwhile, and is closed when Take
// returns; the listener's Close ends a Take that waits.
func TestTake(t *testing.T) {
	h := &takeHandler{taken: make(chan netip.AddrPort, 2), gone: make(chan struct{}, 2)}
	l := listen(t, Limits{MaxConns: 10, MaxConnsPerSource: 2, HandshakeTimeout: 100 * time.Millisecond}, h)
	a := dial(t, l)
	if got := roundTrip(t, a, "T please"); got != "ok" {
		t.Fatalf("answer to the take-over: %q, want ok", got)
	}
	<-h.taken
	// Past the handshake timeout, the taken connection is still the
	// Handler's: it echoes raw bytes, unframed.
	time.Sleep(200 * time.Millisecond)
	if _, err := a.Conn.Write([]byte("raw")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 3)
	if _, err := io.ReadFull(a.Conn, buf); err != nil || string(buf) != "raw" {
		t.Fatalf("raw echo: %q, %v; want raw", buf, err)
	}
	// It holds its place: one more connection from the source fits,
	// a third does not.
	b := dial(t, l)
	roundTrip(t, b, "A b")
	c := dial(t, l)
	if got := roundTrip(t, c, "hello"); got != "no"+string(rune(RefusedSourceConns)) {
		t.Fatalf("a third connection with one taken over got %q, want the refusal", got)
	}
	a.Close()
	<-h.gone
	waitClosed(t, c, 5*time.Second)
	// b's place and a's: a new connection is taken over, and the
	// listener's Close ends its Take.
	d := dial(t, l)
	if got := roundTrip(t, d, "T again"); got != "ok" {
		t.Fatalf("answer to the second take-over: %q, want ok", got)
	}
	<-h.taken
	l.Close()
	<-h.gone
}
