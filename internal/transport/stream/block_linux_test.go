package stream

import (
	"errors"
	"io"
	"os"
	"runtime"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/volley-net/volley/internal/kwait"
	"github.com/volley-net/volley/internal/testenv"
)

// TestBlockingConn: a blocking Conn leaves the poller and comes back to
// it; its reads end at the peer's end, at Close and at a deadline another
// goroutine moves into the past.
func TestBlockingConn(t *testing.T) {
	for _, mode := range []string{"blocking", "blocking unix"} {
		t.Run(mode, func(t *testing.T) { testBlockingConn(t, mode) })
	}
}

func testBlockingConn(t *testing.T, mode string) {
	a, b := modePipe(t, mode)
	if kwait.InPoller(b.Conn.(syscall.Conn)) {
		t.Fatal("a blocking connection is still in the runtime's poller")
	}
	buf := make([]byte, 100)
	a.Write([]byte("one"))
	b.SetReadDeadline(time.Now().Add(5 * time.Second))
	if n, err := b.Read(buf); err != nil || string(buf[:n]) != "one" {
		t.Fatalf("blocking Read = %q, %v", buf[:n], err)
	}
	if err := b.SetBlockingReads(false); err != nil {
		t.Fatal(err)
	}
	if !kwait.InPoller(b.Conn.(syscall.Conn)) {
		t.Fatal("the connection did not go back to the runtime's poller")
	}
	a.Write([]byte("two"))
	if n, err := b.Read(buf); err != nil || string(buf[:n]) != "two" {
		t.Fatalf("Read back in the poller = %q, %v", buf[:n], err)
	}

	for _, end := range []struct {
		name string
		do   func(a, b *Conn)
		want error
	}{
		{"peer gone", func(a, b *Conn) { a.Close() }, io.EOF},
		{"interrupt", func(a, b *Conn) { b.SetReadDeadline(time.Unix(1, 0)) }, os.ErrDeadlineExceeded},
		{"close", func(a, b *Conn) { b.Close() }, nil},
	} {
		a, b := modePipe(t, mode)
		b.SetReadDeadline(time.Time{})
		done := make(chan error, 1)
		go func() {
			_, err := b.Read(make([]byte, 100))
			done <- err
		}()
		time.Sleep(50 * time.Millisecond) // let it block
		end.do(a, b)
		select {
		case err := <-done:
			if err == nil || end.want != nil && !errors.Is(err, end.want) {
				t.Errorf("%s: the blocked Read returned %v, want %v", end.name, err, end.want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: the blocked Read did not return", end.name)
		}
	}
}

// TestBlockingWriteStall: a blocking Conn's writes to a peer that reads
// nothing end at their stall limit, as in the poller.
func TestBlockingWriteStall(t *testing.T) {
	a, _ := pipe(t)
	if err := a.SetBlockingReads(true); err != nil {
		t.Skipf("skipping: %v", err)
	}
	frame := make([]byte, FrameHeaderLen+1<<20)
	done := make(chan error, 1)
	go func() {
		for range 64 { // far more than the socket buffers hold
			if err := a.WriteFrame(frame, 1<<20, 200*time.Millisecond); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	select {
	case err := <-done:
		if !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("writes to a peer that reads nothing = %v, want the stall's deadline", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("a write to a stalled peer did not end")
	}
}

// TestBlockingPeers: a listener's peers read in the kernel once in a
// session, at most maxBlockingPeers at a time; the others, and those out
// of a session, in the poller; and a place is given back as a peer leaves.
func TestBlockingPeers(t *testing.T) {
	l := listen(t, Limits{}, &echoHandler{})
	cs := make([]*Conn, maxBlockingPeers+2)
	for i := range cs {
		cs[i] = dial(t, l)
		roundTrip(t, cs[i], "small, no session")
	}
	if n := l.blockers.Load(); n != 0 {
		t.Fatalf("%d peers out of a session read in the kernel, want 0", n)
	}
	for _, c := range cs {
		roundTrip(t, c, "A session")
		roundTrip(t, c, "A again") // its reader went blocking after the first
	}
	if n := l.blockers.Load(); n != maxBlockingPeers {
		t.Fatalf("%d peers in sessions read in the kernel, want %d", n, maxBlockingPeers)
	}
	cs[0].Close()
	waitPlaces(t, l, maxBlockingPeers-1, "a blocking peer that left kept its place")
}

// waitPlaces waits until at most atMost of l's places, in the kernel or
// spinning, are taken, or fails with why.
func waitPlaces(t *testing.T, l *Listener, atMost int32, why string) {
	t.Helper()
	waitFor(t, why, func() bool { return taken(l) <= atMost })
}

// taken is how many of l's readers wait in the kernel or spin.
func taken(l *Listener) int32 { return l.blockers.Load() + l.spinners.Load() }

// TestUnixWaitsForMessages: a blocking Unix stream Conn that reads a
// probe a frame at a time, while another goroutine writes each reply
// (a held one) that the peer then reads, sleeps once a round: its waits
// for a message's start are kwait.Conn.Read's, which the peer's reads do
// not wake (found by a reviewer: with ReadRest for every read, all tests
// passed at 103-112 sleeps in 49 rounds).
func TestUnixWaitsForMessages(t *testing.T) {
	a, b := modePipe(t, "blocking unix")
	const rounds = 50
	peer := make(chan struct{})
	go func() { // a probe, then its reply, then a pause
		defer close(peer)
		buf := make([]byte, 100)
		for range rounds {
			if _, err := a.Write([]byte("probe")); err != nil {
				return
			}
			if _, err := a.Read(buf); err != nil {
				return
			}
			time.Sleep(2 * time.Millisecond)
		}
	}()
	defer func() { a.Close(); <-peer }()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	held := make(chan struct{}, 1)
	var writer sync.WaitGroup
	writer.Go(func() {
		for range held {
			time.Sleep(500 * time.Microsecond)
			_, _ = b.Write([]byte("reply"))
		}
	})
	defer func() { close(held); writer.Wait() }()
	b.SetReadDeadline(time.Now().Add(10 * time.Second))
	buf := make([]byte, 100)
	probe := func() {
		if n, err := b.Read(buf); err != nil || string(buf[:n]) != "probe" {
			t.Fatalf("Read = %q, %v", buf[:n], err)
		}
		held <- struct{}{}
	}
	probe() // the first: its wait began before the count
	if got := testenv.ThreadSleeps(t, rounds-1, probe); got > (rounds-1)*3/2 {
		t.Errorf("the reader's thread slept %d times in %d rounds, want about one a round", got, rounds-1)
	}
}
