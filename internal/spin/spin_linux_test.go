package spin

import (
	"errors"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/volley-net/volley/internal/clock"
)

// TestReadFor: a read with a quiet spell ends with ErrQuiet when nothing
// comes, before its deadline, and the next one gets what came; a deadline
// before the spell's end ends it first; without a spell, only the
// deadline does.
func TestReadFor(t *testing.T) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_DGRAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fds[0])
	defer unix.Close(fds[1])
	var deadline atomic.Int64
	deadline.Store(clock.Deadline(time.Now().Add(10 * time.Second)))
	buf := make([]byte, 16)
	start := time.Now()
	if _, err := ReadFor(uintptr(fds[0]), buf, &deadline, nil, time.Millisecond); !errors.Is(err, ErrQuiet) {
		t.Fatalf("ReadFor on a quiet socket = %v, want ErrQuiet", err)
	}
	if took := time.Since(start); took < time.Millisecond {
		t.Fatalf("ReadFor gave up after %v, within its quiet spell of 1ms", took)
	}
	if _, err := unix.Write(fds[1], []byte("probe")); err != nil {
		t.Fatal(err)
	}
	if n, err := ReadFor(uintptr(fds[0]), buf, &deadline, nil, time.Millisecond); err != nil || string(buf[:n]) != "probe" {
		t.Fatalf("ReadFor = %q, %v, want probe", buf[:n], err)
	}
	deadline.Store(clock.Deadline(time.Now().Add(time.Millisecond)))
	if _, err := ReadFor(uintptr(fds[0]), buf, &deadline, nil, time.Hour); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("ReadFor past its deadline = %v, want os.ErrDeadlineExceeded", err)
	}
	deadline.Store(clock.Deadline(time.Now().Add(5 * time.Millisecond)))
	if _, err := Read(uintptr(fds[0]), buf, &deadline, nil); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("Read past its deadline = %v, want os.ErrDeadlineExceeded", err)
	}
}
