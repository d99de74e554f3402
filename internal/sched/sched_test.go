package sched

import (
	"runtime"
	"slices"
	"testing"
)

func TestParseCPUs(t *testing.T) {
	for in, want := range map[string][]int{"0": {0}, "0,2": {0, 2}, "1-3,6": {1, 2, 3, 6}} {
		got, err := ParseCPUs(in)
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("ParseCPUs(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "x", "3-1", "-1", "1,,2"} {
		if _, err := ParseCPUs(bad); err == nil {
			t.Errorf("ParseCPUs(%q) succeeded", bad)
		}
	}
}

// TestPin: pinning the calling thread to CPU 0, which any user may do,
// says so; the thread ends with its goroutine.
func TestPin(t *testing.T) {
	done := make(chan string)
	errs := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread goes with the goroutine
		what, err := Plan{CPUs: []int{0}}.Apply(0)
		errs <- err
		done <- what
	}()
	if err := <-errs; err != nil {
		if runtime.GOOS == "linux" {
			t.Fatal(err)
		}
		t.Skipf("skipping: pinning is Linux's: %v", err)
	}
	if what := <-done; what != "CPU 0" {
		t.Fatalf("Apply said %q, want \"CPU 0\"", what)
	}
}
