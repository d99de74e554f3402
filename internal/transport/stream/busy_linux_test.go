package stream

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/volley-net/volley/internal/testsock"
)

// TestBusyWrites: a busy connection's raw writes carry whole messages,
// including ones larger than the socket's buffer, which wait in the
// poller for room while the peer reads, and a round trip allocates
// nothing.
func TestBusyWrites(t *testing.T) {
	for _, network := range []string{"tcp", "unix"} {
		t.Run(network, func(t *testing.T) {
			a, b := pipeOn(t, network)
			if err := a.SetBusyPoll(true); err != nil {
				t.Skipf("skipping: %v", err)
			}
			sizes := []int{1, 64, 70000, 2 << 20, 64}
			errs := make(chan error, 1)
			go func() {
				for i, n := range sizes {
					if _, err := a.Write(bytes.Repeat([]byte{byte('a' + i)}, n)); err != nil {
						errs <- err
						return
					}
				}
				errs <- nil
			}()
			buf := make([]byte, MaxMessage)
			b.SetReadDeadline(time.Now().Add(10 * time.Second))
			for i, want := range sizes {
				n, err := b.Read(buf)
				if err != nil {
					t.Fatal(err)
				}
				if n != want || bytes.Count(buf[:n], []byte{byte('a' + i)}) != n {
					t.Fatalf("message %d: %d bytes starting %q, want %d of %q", i, n, buf[0], want, byte('a'+i))
				}
			}
			if err := <-errs; err != nil {
				t.Fatal(err)
			}
			go func() { // an echo
				for {
					n, err := b.Read(buf)
					if err != nil {
						return
					}
					if _, err := b.Write(buf[:n]); err != nil {
						return
					}
				}
			}()
			a.SetReadDeadline(time.Now().Add(10 * time.Second))
			msg, in := make([]byte, 64), make([]byte, 64)
			// Few runs: the echo, in the poller of a process whose other
			// goroutine spins, wakes 10-20 ms late each time.
			allocs := testing.AllocsPerRun(20, func() {
				if _, err := a.Write(msg); err != nil {
					t.Fatal(err)
				}
				if _, err := a.Read(in); err != nil {
					t.Fatal(err)
				}
			})
			if allocs != 0 {
				t.Errorf("a busy round trip allocates %.1f times", allocs)
			}
		})
	}
}

// TestBusyWriteStall: a busy write to a peer that reads nothing ends at
// the write deadline, saying so as a write, instead of waiting for ever.
func TestBusyWriteStall(t *testing.T) {
	a, _ := pipe(t)
	if err := a.SetBusyPoll(true); err != nil {
		t.Skipf("skipping: %v", err)
	}
	buf := make([]byte, FrameHeaderLen+MaxMessage)
	done := make(chan error, 1)
	go func() {
		var err error
		for err == nil {
			err = a.WriteFrame(buf, MaxMessage, 50*time.Millisecond)
		}
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, os.ErrDeadlineExceeded) || strings.Contains(err.Error(), "raw-write") {
			t.Errorf("busy write to a stalled peer = %v, want the deadline, said as a write", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("a busy write to a stalled peer went on past its deadline")
	}
}

// TestBusyWritePeerGone: a busy write to a peer that closed fails with the
// peer's reset or a broken pipe, named as a write between the two ends,
// and the process goes on (no SIGPIPE).
func TestBusyWritePeerGone(t *testing.T) {
	a, b := pipe(t)
	if err := a.SetBusyPoll(true); err != nil {
		t.Skipf("skipping: %v", err)
	}
	b.Close()
	var err error
	for i := 0; i < 1000 && err == nil; i++ {
		_, err = a.Write(make([]byte, 1000))
		time.Sleep(time.Millisecond)
	}
	if !errors.Is(err, syscall.EPIPE) && !errors.Is(err, syscall.ECONNRESET) {
		t.Errorf("busy writes to a closed peer: %v, want EPIPE or ECONNRESET", err)
	}
	// Said as a write in the poller says it, with both ends.
	if want := "write tcp " + a.LocalAddr().String() + "->" + a.RemoteAddr().String() + ": write: "; !strings.HasPrefix(err.Error(), want) {
		t.Errorf("busy write error %q does not start %q", err, want)
	}
}

// TestBusyPeers: a busy-polling listener's peer spins once in a session
// while its session is the only one, quiet or not; connections that say
// nothing, or nothing of a session, wait in the poller (ten silent ones
// spinning cut a client's round trips on 2 cores tenfold). A second
// session stops the spin, of a quiet spinner within its quiet spell, of a
// busy one at its next answer (a spinner that kept the core had the
// other answered in the scheduler's 10 ms steps), and both wait in the
// poller; as the second leaves its session, the first spins again; and a
// place is given back as a peer leaves.
func TestBusyPeers(t *testing.T) {
	for _, tt := range []struct {
		name  string
		quiet time.Duration // the spinner's quiet spell
	}{{"quiet spinner", spinQuiet}, {"busy spinner", time.Hour}} {
		t.Run(tt.name, func(t *testing.T) { busyPeers(t, tt.quiet) })
	}
}

func busyPeers(t *testing.T, quiet time.Duration) {
	// A handshake timeout past the test's waits: b, out of its session,
	// is not closed meanwhile, which would end its session anyway.
	l := listen(t, Limits{HandshakeTimeout: time.Minute}, &echoHandler{})
	if err := l.SetBusyPoll(true); err != nil {
		t.Skipf("skipping: %v", err)
	}
	l.mu.Lock() // before any peer's reader: the accept loop takes it first
	l.spinQuiet = quiet
	l.mu.Unlock()
	for range 3 {
		dial(t, l) // silent
	}
	a, b := dial(t, l), dial(t, l)
	for _, c := range []*Conn{a, b, dial(t, l)} {
		roundTrip(t, c, "small, no session")
	}
	if n := spinners(l); n != 0 || taken(l) != 0 {
		t.Fatalf("%d peers out of a session spin (%d places taken), want 0", n, taken(l))
	}
	roundTrip(t, a, "A session")
	if got := roundTrip(t, a, "A again"); got != "A again" { // its reader spins after the first
		t.Fatalf("a spinning peer answered %q", got)
	}
	time.Sleep(20 * time.Millisecond) // quiet, alone
	if !spinsFor(l, a) || spinners(l) != 1 {
		t.Fatalf("the only session's peer: spinning %v, %d spinners; want it alone spinning", spinsFor(l, a), spinners(l))
	}
	roundTrip(t, b, "A session")
	roundTrip(t, b, "A again")
	waitFor(t, "a spinner kept spinning beside a second session", func() bool {
		if quiet > time.Second {
			roundTrip(t, a, "A busy")
		}
		return spinners(l) == 0 && taken(l) == 0
	})
	roundTrip(t, b, "small, out of the session")
	waitFor(t, "the only session left never spun again", func() bool {
		roundTrip(t, a, "A session")
		return spinsFor(l, a)
	})
	a.Close()
	waitPlaces(t, l, 0, "a spinning peer that left kept its place")
}

// waitFor waits until ok, or fails with why.
func waitFor(t *testing.T, why string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatal(why)
		}
		time.Sleep(time.Millisecond)
	}
}

// spinsFor says whether the peer at the far end of c spins.
func spinsFor(l *Listener, c *Conn) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	p := l.peers[c.LocalAddr().(*net.TCPAddr).AddrPort()]
	return p != nil && p.c.busy.Load() != nil
}

// TestBusyIdleTimeout: a peer that starts spinning in its session keeps
// the idle deadline set before: gone quiet, it is closed, and its place
// given back.
func TestBusyIdleTimeout(t *testing.T) {
	l := listen(t, Limits{IdleTimeout: 300 * time.Millisecond}, &echoHandler{})
	if err := l.SetBusyPoll(true); err != nil {
		t.Skipf("skipping: %v", err)
	}
	c := dial(t, l)
	roundTrip(t, c, "A session")
	roundTrip(t, c, "A again") // its reader spins after the first
	if n := spinners(l); n != 1 {
		t.Fatalf("%d peers spin, want 1", n)
	}
	waitClosed(t, c, 5*time.Second)
	waitPlaces(t, l, 0, "a spinning peer closed for idling kept its place")
}

// spinners counts l's peers whose connections spin.
func spinners(l *Listener) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, p := range l.peers {
		if p.c.busy.Load() != nil {
			n++
		}
	}
	return n
}

// TestDescriptorCopy: a busy or blocking Conn reads and writes through a
// copy of its descriptor (kwait.Copy), which goes when the Conn goes back
// to the poller, when it takes the same way anew, and when it closes, a
// read spinning or waiting in the kernel then included: none is left open.
func TestDescriptorCopy(t *testing.T) {
	for _, mode := range []string{"busy", "blocking"} {
		t.Run(mode, func(t *testing.T) { testDescriptorCopy(t, mode) })
	}
}

func testDescriptorCopy(t *testing.T, mode string) {
	a, b := pipe(t)
	set := b.SetBusyPoll
	if mode == "blocking" {
		set = b.SetBlockingReads
	}
	base := testsock.OpenFDs(t)
	b.SetReadDeadline(time.Now().Add(10 * time.Second))
	buf := make([]byte, 16)
	testsock.StepCopies(t, set, base, func(i int, step string) {
		a.Write([]byte("ping"))
		if n, err := b.Read(buf); err != nil || string(buf[:n]) != "ping" {
			t.Fatalf("step %d (%s): Read = %q, %v", i, step, buf[:n], err)
		}
		if _, err := b.Write([]byte("pong")); err != nil {
			t.Fatalf("step %d (%s): Write: %v", i, step, err)
		}
		if n, err := a.Read(buf); err != nil || string(buf[:n]) != "pong" {
			t.Fatalf("step %d (%s): the peer read %q, %v", i, step, buf[:n], err)
		}
	})
	// A Close while a read spins or waits ends it, and closes the copy
	// with b.
	testsock.CloseEndsRead(t, func() error { _, err := b.Read(buf); return err }, func() { b.Close() })
	if n := testsock.OpenFDs(t); n != base-1 {
		t.Fatalf("after Close: %d descriptors open, want %d (the Conn's and its copy gone)", n, base-1)
	}
	// The peer sees the end at once: no copy holds the socket open.
	a.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := a.Read(buf); !errors.Is(err, io.EOF) {
		t.Fatalf("the peer's Read after Close: %v, want io.EOF", err)
	}
}
