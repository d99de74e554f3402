package stream

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"sync/atomic"
	"testing"
	"time"
)

// TestReadAt: with a read clock, Read says when the message it returned
// came (ReadAt): the clock's reading as the read that brought the
// message's last byte returned. So a message that came while Read waited
// has a reading taken after Read began, and one read ahead with the
// message before it has that message's reading; without a clock, 0. In
// every way of reading, with the clock given before that way was set or
// after.
func TestReadAt(t *testing.T) {
	for _, mode := range readModes {
		for _, clockFirst := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s, clock first %v", mode, clockFirst), func(t *testing.T) {
				testReadAt(t, mode, clockFirst)
			})
		}
	}
}

func testReadAt(t *testing.T, mode string, clockFirst bool) {
	network := "tcp"
	if mode == "blocking unix" {
		network = "unix"
	}
	a, b := pipeOn(t, network)
	var calls atomic.Int64
	clk := func() int64 { return calls.Add(1) }
	buf := make([]byte, 100)
	b.SetReadDeadline(time.Now().Add(10 * time.Second))
	if clockFirst {
		b.SetReadClock(clk)
	}
	switch mode {
	case "busy":
		if err := b.SetBusyPoll(true); err != nil {
			t.Fatal(err)
		}
	case "blocking", "blocking unix":
		if err := b.SetBlockingReads(true); err != nil {
			t.Fatal(err)
		}
	}
	if !clockFirst {
		a.Write([]byte("no clock"))
		if n, err := b.Read(buf); err != nil || string(buf[:n]) != "no clock" || b.ReadAt() != 0 {
			t.Fatalf("without a read clock: Read = %q, %v, ReadAt %d; want the message, 0", buf[:n], err, b.ReadAt())
		}
		b.SetReadClock(clk)
	}

	// A Read that waits for its message.
	before := calls.Load()
	got := make(chan error, 1)
	go func() {
		n, err := b.Read(buf)
		if err == nil && string(buf[:n]) != "waited" {
			err = fmt.Errorf("read %q", buf[:n])
		}
		got <- err
	}()
	time.Sleep(20 * time.Millisecond)
	a.Write([]byte("waited"))
	if err := <-got; err != nil {
		t.Fatalf("a Read that waited: %v", err)
	}
	if at := b.ReadAt(); at <= before || at > calls.Load() {
		t.Fatalf("a Read that waited: ReadAt %d, want a reading after %d and by %d", at, before, calls.Load())
	}

	// Two messages queued before the Reads (loopback queues each within
	// its write): one read brings both.
	a.Write([]byte("first"))
	a.Write([]byte("second"))
	before = calls.Load()
	if n, err := b.Read(buf); err != nil || string(buf[:n]) != "first" {
		t.Fatalf("Read = %q, %v; want first", buf[:n], err)
	}
	first := b.ReadAt()
	if first <= before || first > calls.Load() {
		t.Fatalf("first: ReadAt %d, want a reading after %d and by %d", first, before, calls.Load())
	}
	if n, err := b.Read(buf); err != nil || string(buf[:n]) != "second" {
		t.Fatalf("Read = %q, %v; want second", buf[:n], err)
	}
	if at := b.ReadAt(); at != first {
		t.Fatalf("second, read ahead with the first: ReadAt %d, want the first's %d", at, first)
	}

	// A message whose Read a deadline cut: it came when its rest did.
	msg := "cut by a deadline"
	frame := binary.BigEndian.AppendUint32(nil, uint32(len(msg)))
	frame = append(frame, msg...)
	a.Conn.Write(frame[:10])
	b.SetReadDeadline(time.Now().Add(-time.Second))
	if _, err := b.Read(buf); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("a Read past its deadline, with part of a message there: %v, want the deadline", err)
	}
	before = calls.Load()
	a.Conn.Write(frame[10:])
	b.SetReadDeadline(time.Now().Add(10 * time.Second))
	if n, err := b.Read(buf); err != nil || string(buf[:n]) != msg {
		t.Fatalf("Read of the rest = %q, %v; want %q", buf[:n], err, msg)
	}
	if at := b.ReadAt(); at <= before || at > calls.Load() {
		t.Fatalf("a message a deadline cut: ReadAt %d, want a reading after its rest was sent (%d) and by %d", at, before, calls.Load())
	}
}

// TestListenerReadAt: a listener with a read clock gives its Handler when
// each message came, as the read that brought it returned: a reading taken
// after the message was sent and before the reply came back.
func TestListenerReadAt(t *testing.T) {
	h := &echoHandler{}
	l := listen(t, Limits{}, h)
	var calls atomic.Int64
	l.SetReadClock(func() int64 { return calls.Add(1) })
	c, err := Dial("tcp", l.LocalAddr().String(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	buf := make([]byte, 100)
	for i := range 3 {
		before := calls.Load()
		if _, err := c.Write([]byte("A message")); err != nil {
			t.Fatal(err)
		}
		if n, err := c.Read(buf); err != nil || string(buf[:n]) != "A message" {
			t.Fatalf("reply %d: %q, %v", i, buf[:n], err)
		}
		if at := h.at.Load(); at <= before || at > calls.Load() {
			t.Fatalf("message %d: the Handler's at %d, want a reading after %d and by %d", i, at, before, calls.Load())
		}
	}
}
