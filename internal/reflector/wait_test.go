package reflector

import (
	"errors"
	"slices"
	"testing"
)

// fakeBlocker is a socket whose reads can be moved, or not.
type fakeBlocker struct {
	calls []bool
	fail  bool
}

func (f *fakeBlocker) SetBlockingReads(on bool) error {
	f.calls = append(f.calls, on)
	if f.fail {
		return errors.New("no")
	}
	return nil
}

// TestKernelWaitAfter: the reads move into the kernel with a spell's
// first datagram, the read deadline moves only at checks, idleAfter
// without a datagram moves them back, and a move that failed is tried
// again only retryAfter later.
func TestKernelWaitAfter(t *testing.T) {
	const ms = int64(1e6)
	sock := &fakeBlocker{}
	k := kernelWait{conn: sock}
	far := int64(1e15)
	k.after(0, 10*ms) // a deadline with nothing: stays in the poller
	if k.on || len(sock.calls) != 0 || k.until(far) != far {
		t.Fatalf("idle from the start: on %v, calls %v, until %d", k.on, sock.calls, k.until(far))
	}
	k.after(1, 20*ms)
	if !k.on || k.until(far) != 20*ms+idleAfter {
		t.Fatalf("first datagram: on %v, until %d, want %d", k.on, k.until(far), 20*ms+idleAfter)
	}
	for now := 21 * ms; now < 20*ms+idleAfter; now += 10 * ms {
		k.after(1, now)
		if got := k.until(far); got != 20*ms+idleAfter {
			t.Fatalf("datagram at %d ms: deadline moved to %d", now/ms, got)
		}
	}
	last := 20*ms + idleAfter - 9*ms
	k.after(0, 20*ms+idleAfter) // the check, with a recent datagram
	if !k.on || k.until(far) != last+idleAfter {
		t.Fatalf("check after traffic: on %v, until %d, want %d", k.on, k.until(far), last+idleAfter)
	}
	if k.until(last) != last {
		t.Errorf("an earlier deadline (the report's) is not kept")
	}
	k.after(0, last+idleAfter) // the check, idle
	if k.on || !slices.Equal(sock.calls, []bool{true, false}) || k.until(far) != far {
		t.Fatalf("idle spell: on %v, calls %v, until %d", k.on, sock.calls, k.until(far))
	}

	bad := &fakeBlocker{fail: true}
	k = kernelWait{conn: bad}
	k.after(1, 0)
	k.after(1, retryAfter-1)
	if k.on || len(bad.calls) != 1 {
		t.Fatalf("failed move: on %v, tried %d times before retryAfter, want 1", k.on, len(bad.calls))
	}
	bad.fail = false
	k.after(1, retryAfter)
	if !k.on || len(bad.calls) != 2 {
		t.Fatalf("retry: on %v, tried %d times, want 2", k.on, len(bad.calls))
	}
	k.stop()
	if k.on || !slices.Equal(bad.calls, []bool{true, true, false}) {
		t.Fatalf("stop: on %v, calls %v", k.on, bad.calls)
	}
}
