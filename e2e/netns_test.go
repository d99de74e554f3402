package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// vethNamespaces makes two network namespaces joined by a veth pair, named
// after tag, with 10.SUBNET.0.1/30 and fdNN::1/64 in the first and .2 and
// ::2 in the second (NN: SUBNET less 200), loopback and the pair up, and
// returns their names; they are deleted when the test ends. The test
// skips (or, where VOLLEY_REQUIRE names netns, fails) without root, ip(8)
// or the right to make namespaces (a container's root may lack it).
func vethNamespaces(t *testing.T, tag string, subnet int) (string, string) {
	t.Helper()
	var missing error
	if os.Geteuid() != 0 {
		missing = fmt.Errorf("not root")
	} else if _, err := exec.LookPath("ip"); err != nil {
		missing = err
	}
	require(t, "netns", missing)
	suffix := fmt.Sprint(os.Getpid() % 100000)
	nsA, nsB := tag+"-a"+suffix, tag+"-b"+suffix
	devA, devB := tag+"A"+suffix, tag+"B"+suffix
	ip := func(args ...string) {
		t.Helper()
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			t.Fatalf("ip %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	if out, err := exec.Command("ip", "netns", "add", nsA).CombinedOutput(); err != nil {
		require(t, "netns", fmt.Errorf("ip netns add: %v: %s", err, strings.TrimSpace(string(out))))
	}
	t.Cleanup(func() { exec.Command("ip", "netns", "del", nsA).Run() })
	ip("netns", "add", nsB)
	t.Cleanup(func() { exec.Command("ip", "netns", "del", nsB).Run() })
	ip("link", "add", devA, "netns", nsA, "type", "veth", "peer", "name", devB, "netns", nsB)
	for i, side := range []struct{ ns, dev string }{{nsA, devA}, {nsB, devB}} {
		ip("-n", side.ns, "addr", "add", fmt.Sprintf("10.%d.0.%d/30", subnet, i+1), "dev", side.dev)
		ip("-n", side.ns, "-6", "addr", "add", fmt.Sprintf("fd%d::%d/64", subnet-200, i+1), "dev", side.dev, "nodad")
		ip("-n", side.ns, "link", "set", "lo", "up")
		ip("-n", side.ns, "link", "set", side.dev, "up")
	}
	return nsA, nsB
}
