package testsock

import (
	"os"
	"testing"
	"time"
)

// OpenFDs returns how many descriptors the process has open, or skips
// the test where /proc/self/fd cannot say.
func OpenFDs(t testing.TB) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("skipping: %v", err)
	}
	return len(ents)
}

// StepCopies turns a socket's copy of its descriptor on and off with set
// (on, on again, off, on), fails the test unless the process then has
// base descriptors open, and one more while the copy is on, and after
// each step calls exchange with its number and name, to pass data both
// ways.
func StepCopies(t testing.TB, set func(on bool) error, base int, exchange func(i int, step string)) {
	t.Helper()
	for i, step := range []string{"on", "on again", "off", "on"} {
		if err := set(step != "off"); err != nil {
			t.Fatal(err)
		}
		want := base + 1
		if step == "off" {
			want = base
		}
		if n := OpenFDs(t); n != want {
			t.Fatalf("step %d (%s): %d descriptors open, want %d", i, step, n, want)
		}
		exchange(i, step)
	}
}

// CloseEndsRead runs read on its own goroutine, lets it wait, calls
// closeFn, and fails the test unless read then returns an error within 5
// s: a Close ends a read that spins or waits in the kernel.
func CloseEndsRead(t testing.TB, read func() error, closeFn func()) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- read() }()
	time.Sleep(20 * time.Millisecond) // let it spin or wait
	closeFn()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("a waiting Read returned no error at Close")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a waiting Read did not end at Close")
	}
}
