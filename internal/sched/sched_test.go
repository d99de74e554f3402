package sched

import (
	"errors"
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

func TestFormatCPUs(t *testing.T) {
	for _, tt := range []struct {
		in   []int
		want string
	}{{nil, ""}, {[]int{0}, "0"}, {[]int{0, 1}, "0,1"}, {[]int{0, 1, 2, 3, 6}, "0-3,6"}, {[]int{1, 3, 4, 5, 7, 8}, "1,3-5,7,8"}} {
		got := FormatCPUs(tt.in)
		if got != tt.want {
			t.Errorf("FormatCPUs(%v) = %q, want %q", tt.in, got, tt.want)
		}
		if back, err := ParseCPUs(got); len(tt.in) > 0 && (err != nil || !slices.Equal(back, tt.in)) {
			t.Errorf("ParseCPUs(FormatCPUs(%v)) = %v, %v", tt.in, back, err)
		}
	}
}

// TestAllowed: the CPUs the process may run on are as many as the
// runtime counts.
func TestAllowed(t *testing.T) {
	cpus, err := Allowed()
	if errors.Is(err, errors.ErrUnsupported) {
		t.Skipf("skipping: %v", err)
	}
	if err != nil || len(cpus) != runtime.NumCPU() {
		t.Fatalf("Allowed() = %v, %v; want %d CPUs", cpus, err, runtime.NumCPU())
	}
}
