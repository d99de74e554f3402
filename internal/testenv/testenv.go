// Package testenv holds how tests meet what a machine may lack. A test
// that needs a missing system component (IPv6 loopback, root for network
// namespaces, a D-Bus daemon) skips with the reason, unless the variable
// VOLLEY_REQUIRE lists the component, in which case it fails: CI sets it,
// so that an absence there is never a silent pass. Only tests import it.
//
// go test prints skip reasons only with -v (a passing package's output is
// hidden in package list mode); every skip message in the module starts
// with "skipping: ", so that
//
//	go test -v ./... 2>&1 | grep -E -- '--- SKIP|skipping:'
//
// lists each skipped test and why.
package testenv

import (
	"os"
	"strconv"
	"strings"
	"testing"
)

// Var is the environment variable that lists the required components,
// comma-separated ("ipv6,netns,dbus"), or "all".
const Var = "VOLLEY_REQUIRE"

// Required reports whether VOLLEY_REQUIRE lists component, or says all.
func Required(component string) bool {
	for _, c := range strings.Split(os.Getenv(Var), ",") {
		if c = strings.TrimSpace(c); c == component || c == "all" {
			return true
		}
	}
	return false
}

// Require returns when missing is nil. Otherwise it fails t if
// VOLLEY_REQUIRE lists component, and skips t with the reason if not.
func Require(t testing.TB, component string, missing error) {
	t.Helper()
	if missing == nil {
		return
	}
	if Required(component) {
		t.Fatalf("%s is required (%s=%s) but missing: %v", component, Var, os.Getenv(Var), missing)
	}
	t.Skipf("skipping: %s is missing: %v", component, missing)
}

// ThreadSleeps is how many times the calling thread gave up its CPU (its
// voluntary context switches) over n calls of f; a test that counts them
// locks its goroutine to the thread. Where /proc does not say, the test
// skips.
func ThreadSleeps(t testing.TB, n int, f func()) int {
	t.Helper()
	before := threadSleeps(t)
	for range n {
		f()
	}
	return threadSleeps(t) - before
}

func threadSleeps(t testing.TB) int {
	t.Helper()
	b, err := os.ReadFile("/proc/thread-self/status")
	if err != nil {
		t.Skipf("skipping: %v", err)
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "voluntary_ctxt_switches:"); ok {
			n, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatal("no voluntary_ctxt_switches in /proc/thread-self/status")
	return 0
}
