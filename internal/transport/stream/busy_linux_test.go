package stream

import (
	"bytes"
	"errors"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// TestBusyWrites: a busy connection's raw writes carry whole messages
// from two goroutines at once (WriteFrame: a reflector's held replies go
// from another), including ones larger than the socket's buffer, which wait
// in the poller for room while the peer reads.
func TestBusyWrites(t *testing.T) {
	for _, network := range []string{"tcp", "unix"} {
		t.Run(network, func(t *testing.T) {
			a, b := pipeOn(t, network)
			if err := a.SetBusyPoll(true); err != nil {
				t.Skipf("skipping: %v", err)
			}
			sizes := []int{1, 64, 70000, 2 << 20}
			var wg sync.WaitGroup
			for w := range 2 {
				wg.Go(func() {
					for i, n := range sizes {
						buf := bytes.Repeat([]byte{byte('a' + 10*w + i)}, FrameHeaderLen+n)
						if err := a.WriteFrame(buf, n, 0); err != nil {
							t.Errorf("writer %d, message %d: %v", w, i, err)
							return
						}
					}
				})
			}
			buf := make([]byte, MaxMessage)
			b.SetReadDeadline(time.Now().Add(10 * time.Second))
			seen := map[byte]int{}
			for range 2 * len(sizes) {
				n, err := b.Read(buf)
				if err != nil {
					t.Fatal(err)
				}
				if c := buf[0]; bytes.Count(buf[:n], []byte{c}) != n {
					t.Fatalf("a %d-byte message starting %q mixes bytes of another", n, c)
				}
				seen[buf[0]] = n
			}
			wg.Wait()
			for w := range 2 {
				for i, n := range sizes {
					if c := byte('a' + 10*w + i); seen[c] != n {
						t.Errorf("writer %d, message %d: got %d bytes, want %d", w, i, seen[c], n)
					}
				}
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
