package kwait

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/volley-net/volley/internal/clock"
	"github.com/volley-net/volley/internal/testenv"
)

// TestParseEntry: an epoll instance's fdinfo gives each target's events
// and its 64-bit data whole; a descriptor it does not list is not found.
func TestParseEntry(t *testing.T) {
	info := "pos:\t0\nflags:\t02000002\nmnt_id:\t17\nino:\t1038\n" +
		"tfd:        7 events:       19 data:           67a858  pos:0 ino:40e sdev:10\n" +
		"tfd:       15 events: 8000201d data: 3fc3b9f248000001  pos:0 ino:455c19 sdev:9\n"
	for _, tt := range []struct {
		fd     int
		ok     bool
		events uint32
		data   uint64
	}{
		{7, true, 0x19, 0x67a858},
		{15, true, 0x8000201d, 0x3fc3b9f248000001},
		{5, false, 0, 0},
		{1, false, 0, 0},
	} {
		e, ok := parseEntry(info, tt.fd)
		if ok != tt.ok {
			t.Fatalf("fd %d: found %v, want %v", tt.fd, ok, tt.ok)
		}
		if !ok {
			continue
		}
		if data := *(*uint64)(unsafe.Pointer(&e.Fd)); e.Events != tt.events || data != tt.data {
			t.Errorf("fd %d: events %x data %x, want %x %x", tt.fd, e.Events, data, tt.events, tt.data)
		}
	}
}

// TestLeaveRejoin: a socket leaves the runtime's poller and comes back
// with its entry as it was: a read waiting in the poller afterwards is
// woken by a datagram.
func TestLeaveRejoin(t *testing.T) {
	a, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	rc, err := a.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var s Socket
	var before, after unix.EpollEvent
	call := func(f func(fd int) error) {
		t.Helper()
		var ferr error
		if err := rc.Control(func(fd uintptr) { ferr = f(int(fd)) }); err != nil || ferr != nil {
			t.Fatal(err, ferr)
		}
	}
	call(func(fd int) error {
		_, e, err := pollerEntry(fd)
		before = e
		return err
	})
	call(s.Leave)
	if InPoller(a) {
		t.Fatal("the socket is still in the poller")
	}
	call(s.Rejoin)
	call(func(fd int) error {
		_, e, err := pollerEntry(fd)
		after = e
		return err
	})
	if before != after {
		t.Fatalf("the entry came back as %+v, not as it was, %+v", after, before)
	}
	b, err := net.DialUDP("udp", nil, a.LocalAddr().(*net.UDPAddr))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	go func() {
		time.Sleep(50 * time.Millisecond)
		b.Write([]byte("x"))
	}()
	a.SetReadDeadline(time.Now().Add(10 * time.Second))
	if n, _, err := a.ReadFrom(make([]byte, 8)); n != 1 || err != nil {
		t.Fatalf("a read in the poller after Rejoin = %d, %v", n, err)
	}
}

// TestUnixStreamWakes: a read waiting on a Unix stream socket wakes once
// for each message that comes, not also when the peer reads what this end
// sent (see Socket.pollFirst): in a ping-pong whose peer waits a little
// before it answers, the reader's thread sleeps once a round. A blocking
// read(2) slept about twice.
func TestUnixStreamWakes(t *testing.T) {
	a, b := unixPair(t)
	const rounds = 100
	peer := make(chan struct{})
	go func() { // reads a byte, waits, answers, until b is closed
		defer close(peer)
		var one [1]byte
		for {
			if _, err := io.ReadFull(b, one[:]); err != nil {
				return
			}
			time.Sleep(time.Millisecond) // the reader is asleep by now
			if _, err := b.Write(one[:]); err != nil {
				return
			}
		}
	}()
	defer func() { b.Close(); <-peer }()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	c, rd := outOfPoller(t, a)
	defer c.Rejoin()
	rd.Store(clock.Deadline(time.Now().Add(10 * time.Second))) // for all the rounds
	var one [1]byte
	var failed error
	round := func() {
		if failed != nil {
			return
		}
		if _, err := c.Write(one[:]); err != nil {
			failed = err
		} else if n, err := c.Read(one[:]); n != 1 || err != nil {
			failed = fmt.Errorf("Read = %d, %v", n, err)
		}
	}
	got := testenv.ThreadSleeps(t, rounds, round)
	if failed != nil {
		t.Fatal(failed)
	}
	if got > rounds*3/2 {
		t.Errorf("the reader's thread slept %d times in %d rounds, want about one a round", got, rounds)
	}
	if allocs := testing.AllocsPerRun(20, round); allocs != 0 {
		t.Errorf("a round allocated %.1f times, want none", allocs)
	}
	if failed != nil {
		t.Fatal(failed)
	}
}

// TestCloseRace: a read that Closing ends returns net.ErrClosed, never
// the peer's end (0 bytes, no error), which the shutdown that wakes it
// also looks like (found by a reviewer: 36 in 3,000 did, waiting in ppoll).
func TestCloseRace(t *testing.T) {
	for _, poll := range []bool{false, true} {
		t.Run(fmt.Sprintf("pollFirst %v", poll), func(t *testing.T) { testCloseRace(t, poll) })
	}
}

func testCloseRace(t *testing.T, poll bool) {
	for i := range 1000 {
		a, b := unixPair(t)
		c, rd := outOfPoller(t, a)
		c.ks.pollFirst = poll
		rd.Store(clock.Deadline(time.Unix(1, 0))) // past: no wait, straight to the read
		done := make(chan struct{})
		go func() {
			defer close(done)
			for range i % 50 * 20 { // Closing at a different point each time
				_ = time.Now()
			}
			c.Closing()
		}()
		var buf [8]byte
		for {
			n, err := c.Read(buf[:])
			if errors.Is(err, os.ErrDeadlineExceeded) {
				select {
				case <-done:
				default:
					continue // not closed yet
				}
			} else if !errors.Is(err, net.ErrClosed) {
				t.Fatalf("try %d: a read Closing ended = %d, %v; want net.ErrClosed", i, n, err)
			}
			break
		}
		<-done
		a.Close()
		b.Close()
	}
}

// unixPair returns the two ends of a Unix stream connection.
func unixPair(t *testing.T) (net.Conn, net.Conn) {
	t.Helper()
	ln, err := net.Listen("unix", filepath.Join(t.TempDir(), "s"))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	type accepted struct {
		c   net.Conn
		err error
	}
	ch := make(chan accepted, 1)
	go func() {
		c, err := ln.Accept()
		ch <- accepted{c, err}
	}()
	a, err := net.Dial("unix", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	got := <-ch
	if got.err != nil {
		a.Close()
		t.Fatal(got.err)
	}
	t.Cleanup(func() { a.Close(); got.c.Close() })
	return a, got.c
}

// outOfPoller takes a out of the runtime's poller as a Conn, and returns
// it with its read deadline.
func outOfPoller(t *testing.T, a net.Conn) (*Conn, *atomic.Int64) {
	t.Helper()
	rc, err := a.(syscall.Conn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var rd, wd atomic.Int64
	c, err := NewConn(rc, &rd, &wd)
	if err != nil {
		t.Skipf("skipping: %v", err)
	}
	return c, &rd
}

// TestUnixStreamWakesHeld: a reflector's reader reads each probe in two
// parts (Read, then ReadRest) while another goroutine writes the held
// reply, which the peer reads as the reader waits for the next probe:
// that wait sleeps once too (found by a reviewer: a version that waited
// in ppoll only after this goroutine's own writes slept three times a
// round, not two).
func TestUnixStreamWakesHeld(t *testing.T) {
	a, b := unixPair(t)
	const rounds = 50
	peer := make(chan struct{})
	go func() { // the client: a probe in two parts 1 ms apart, then its reply
		defer close(peer)
		var one [1]byte
		for range rounds {
			for _, gap := range []time.Duration{0, time.Millisecond} {
				time.Sleep(gap)
				if _, err := b.Write(one[:]); err != nil {
					return
				}
			}
			if _, err := io.ReadFull(b, one[:]); err != nil {
				return
			}
			time.Sleep(2 * time.Millisecond) // the next probe comes later
		}
	}()
	defer func() { b.Close(); <-peer }()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	c, rd := outOfPoller(t, a)
	defer c.Rejoin()
	rd.Store(clock.Deadline(time.Now().Add(10 * time.Second)))
	held := make(chan struct{}, 1)
	var writer sync.WaitGroup
	writer.Go(func() { // the held-reply writer
		for range held {
			time.Sleep(500 * time.Microsecond)
			_, _ = c.Write([]byte{1})
		}
	})
	defer func() { close(held); writer.Wait() }()
	var one [1]byte
	probe := func() {
		if n, err := c.Read(one[:]); n != 1 || err != nil {
			t.Fatalf("Read = %d, %v", n, err)
		}
		if n, err := c.ReadRest(one[:]); n != 1 || err != nil {
			t.Fatalf("ReadRest = %d, %v", n, err)
		}
		held <- struct{}{}
	}
	probe() // the first: its wait began before the count
	if got := testenv.ThreadSleeps(t, rounds-1, probe); got > (rounds-1)*5/2 {
		t.Errorf("the reader's thread slept %d times in %d rounds, want about two a round (one a read)", got, rounds-1)
	}
}
