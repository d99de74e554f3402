package e2e

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/volley-net/volley/internal/result"
)

// The bottleneck of the latency-under-load tests: a tbf qdisc on one veth
// of a pair joining two network namespaces, at 50 Mbit/s with a queue of
// 125 000 bytes, which takes 20 ms to drain at that rate. When bulk TCP
// streams keep it full, every packet behind them (the probes among them)
// waits about that long. The namespaces' TCP is Reno (see lossBased), a
// sender that fills a drop-tail queue.
//
// Why 20 ms and not more: the streams leave from the namespace that holds
// the queue, and a sender that keeps its own queue short leaves a deep
// one part empty. By hand (iperf 2, four streams, volley client --rate
// 100 -t 10s alongside), a 60 ms queue (limit 375000) added 52 ms to the
// up delay's median with CUBIC but only 14 ms with BBR (0.24 of the
// depth); a 20 ms queue added 17 ms with CUBIC and 14 ms with BBR (0.86
// and 0.71 of it). At 20 ms even a bulk stream that picks BBR for itself
// fills most of the queue, the queue drains at once when the load ends,
// and 20 ms is still a hundred times the idle delay (0.1 to 0.3 ms here).
const (
	tbfRate  = 50_000_000 // bits per second (tc's "50mbit": 10^6 bits)
	tbfLimit = 125_000    // bytes the queue holds
	tbfBurst = "32kbit"   // 4000 bytes: less than three packets at line rate
)

// tbfDepth is how long a full queue takes to drain: the delay it adds.
const tbfDepth = time.Duration(tbfLimit*8) * time.Second / tbfRate

// The bands the tests hold the measured delays to, around tbfDepth. The
// median of the shaped direction's delay grows by between growthLow and
// growthHigh times the depth: a queue kept full adds the whole depth less
// what the senders' sawtooth leaves empty (CUBIC kept it 0.86 full, BBR
// 0.71 and in-test Go streams with BBR as little as 0.4, above); growth
// of twice the depth is a broken harness, or delay from elsewhere. The
// other direction, whose packets pass no queue, grows by less than
// otherShare of the shaped one's growth; and the idle phases before and
// after the load differ by less than idleDrift: the queue drains within a
// depth of the load's end. None of these bands is tight: a busy machine
// shifts a median by a millisecond, not by a queue's depth.
const (
	growthLow  = 0.3
	growthHigh = 2.0
	otherShare = 0.1
	idleDrift  = tbfDepth / 5
)

// bottleneck makes two network namespaces joined by a veth pair (see
// vethNamespaces: 10.SUBNET.0.1 in the first, .2 in the second), TCP in
// both Reno, and the tbf on the egress of the first's veth (dir "up",
// toward the second) or of the second's ("down").
func bottleneck(t *testing.T, tag string, subnet int, dir string) (nsA, nsB string) {
	t.Helper()
	nsA, nsB = vethNamespaces(t, tag, subnet)
	lossBased(t, nsA)
	lossBased(t, nsB)
	if dir == "up" {
		addTbf(t, nsA)
	} else {
		addTbf(t, nsB)
	}
	return nsA, nsB
}

// TestLoadBottleneck runs volley client --load against a volley server
// --allow-load in another namespace, through the tbf on the loaded
// direction: on the client's side for --load up, on the server's for
// --load down. The loaded phase's delay grows by about the queue's depth
// in that direction only, the report says so (added.queue), the score
// drops from the idle one, the bulk streams move about tbf's rate, and
// the idle phases agree.
func TestLoadBottleneck(t *testing.T) {
	for _, tt := range []struct {
		dir    string // the loaded direction, where the tbf is
		tag    string
		subnet int
	}{
		{"up", "vbu", 216},
		{"down", "vbd", 217},
	} {
		t.Run(tt.dir, func(t *testing.T) {
			nsA, nsB := bottleneck(t, tt.tag, tt.subnet, tt.dir)
			listen := fmt.Sprintf("10.%d.0.2:0", tt.subnet)
			srv := startServerCmd(t, exec.Command("ip", "netns", "exec", nsB, volley, "server", "--listen", listen, "-q", "--allow-load"))
			r := volleyRunIn(t, nsA, "client", srv.addr, "--load", tt.dir+":4", "--phase", "3s", "--format", "json")
			if r.code != 0 {
				t.Fatalf("client exit %d: %s", r.code, r.stderr)
			}
			checkLoadResult(t, tt.dir, parseResult(t, r.stdout).Load)
		})
	}
}

// checkLoadResult checks a --load DIR:4 run's result through a tbf on
// DIR.
func checkLoadResult(t *testing.T, dir string, l *result.Load) {
	t.Helper()
	if l == nil {
		t.Fatal("the result has no load")
	}
	if l.Direction != dir || l.Streams != 4 || len(l.Phases) != 3 {
		t.Fatalf("load direction %q, %d streams, %d phases; want %s, 4, 3", l.Direction, l.Streams, len(l.Phases), dir)
	}
	idle, loaded, after := l.Phases[0], l.Phases[1], l.Phases[2]
	for i, want := range []struct {
		name   string
		loaded bool
	}{{"idle", false}, {"loaded", true}, {"idle-after", false}} {
		if p := l.Phases[i]; p.Name != want.name || p.Loaded != want.loaded {
			t.Errorf("phase %d is %q, loaded %v; want %q, %v", i, p.Name, p.Loaded, want.name, want.loaded)
		}
	}
	if loaded.Streams != 4 {
		t.Errorf("loaded phase ran %d streams, want 4", loaded.Streams)
	}
	if dir == "up" {
		checkBottleneck(t, "up", idle.Probes.Up, loaded.Probes.Up, after.Probes.Up, idle.Probes.Down, loaded.Probes.Down)
	} else {
		checkBottleneck(t, "down", idle.Probes.Down, loaded.Probes.Down, after.Probes.Down, idle.Probes.Up, loaded.Probes.Up)
	}

	goodput, other := loaded.BitsPerSecUp, loaded.BytesDown
	if dir == "down" {
		goodput, other = loaded.BitsPerSecDown, loaded.BytesUp
	}
	t.Logf("loaded phase's %s goodput %.1f Mbit/s", dir, goodput/1e6)
	if goodput < 0.5*tbfRate || goodput > 1.1*tbfRate {
		t.Errorf("loaded phase's %s goodput %.1f Mbit/s through a %d Mbit/s tbf; want 0.5 to 1.1 times its rate", dir, goodput/1e6, tbfRate/1_000_000)
	}
	if other != 0 {
		t.Errorf("loaded phase moved %d bulk bytes the other way than %s; want none", other, dir)
	}

	if loaded.Added == nil || loaded.Added.Queue != dir {
		t.Errorf("loaded phase's added %+v; want the queue built %s", loaded.Added, dir)
	}
	resp := l.Responsiveness
	switch {
	case resp == nil:
		t.Error("no responsiveness score")
	case resp.RPM <= 0 || resp.RPM >= resp.IdleRPM:
		t.Errorf("responsiveness %.0f RPM, idle %.0f RPM; want a positive score below the idle one", resp.RPM, resp.IdleRPM)
	case resp.Queue != dir:
		t.Errorf("responsiveness says the queue built %q, want %s", resp.Queue, dir)
	}
}

// checkBottleneck checks the delays of probes through a tbf on direction
// dir: shaped's median (idle, loaded, idle again) grew by about the
// queue's depth while loaded, and was back after; the other direction's
// (idle, loaded) grew by far less.
func checkBottleneck(t *testing.T, dir string, idle, loaded, after, otherIdle, otherLoaded result.Latency) {
	t.Helper()
	i, l, a := median(t, dir+" idle", idle), median(t, dir+" loaded", loaded), median(t, dir+" idle-after", after)
	oi, ol := median(t, "other idle", otherIdle), median(t, "other loaded", otherLoaded)
	grew, otherGrew := l-i, ol-oi
	t.Logf("%s delay p50 idle %v, loaded %v (+%v), after %v; the other way %v, loaded %v (+%v); queue depth %v",
		dir, i, l, grew, a, oi, ol, otherGrew, tbfDepth)
	low, high := time.Duration(growthLow*float64(tbfDepth)), time.Duration(growthHigh*float64(tbfDepth))
	if grew < low || grew > high {
		t.Errorf("%s delay p50 grew by %v under load (from %v to %v); want %v to %v, about the queue's depth %v",
			dir, grew, i, l, low, high, tbfDepth)
	}
	if otherGrew > time.Duration(otherShare*float64(grew)) {
		t.Errorf("the direction other than %s grew by %v under load (from %v to %v); want less than a tenth of %s's %v",
			dir, otherGrew, oi, ol, dir, grew)
	}
	if d := (a - i).Abs(); d > idleDrift {
		t.Errorf("%s delay p50 idle %v before the load, %v after: %v apart, want under %v", dir, i, a, d, idleDrift)
	}
}

// median returns l's 50th percentile, failing the test if l has none.
func median(t *testing.T, what string, l result.Latency) time.Duration {
	t.Helper()
	v, ok := l.Percentile(50)
	if !ok {
		t.Fatalf("%s delay has no median (%d samples, percentiles %+v)", what, l.Count, l.Percentiles)
	}
	return v
}

// addTbf puts the bottleneck (tbf at tbfRate, tbfLimit bytes of queue) on
// the egress of the veth in namespace ns; it goes with the namespace.
// Without tc, or where the kernel refuses tbf, the test skips (fails
// where VOLLEY_REQUIRE lists netns: the bottleneck is part of it).
func addTbf(t *testing.T, ns string) {
	t.Helper()
	_, err := exec.LookPath("tc")
	require(t, "netns", err)
	dev := vethIn(t, ns)
	args := []string{"-n", ns, "qdisc", "add", "dev", dev, "root", "tbf",
		"rate", fmt.Sprintf("%dbit", tbfRate), "burst", tbfBurst, "limit", fmt.Sprint(tbfLimit)}
	if out, err := exec.Command("tc", args...).CombinedOutput(); err != nil {
		require(t, "netns", fmt.Errorf("tc %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out))))
	}
}

// lossBased makes Reno the congestion control of the TCP connections
// made in namespace ns (its default: no other namespace's changes).
// Reno, as CUBIC and most senders, backs off only when the queue
// overflows, so it keeps a drop-tail queue full; this machine's default,
// BBR, keeps it shorter, by how much varying from run to run. A namespace
// may pick only among the congestion controls the machine allows
// (net.ipv4.tcp_allowed_congestion_control), and Reno, built in, is
// always there. A stream that asks for its own (TCP_CONGESTION) keeps it.
func lossBased(t *testing.T, ns string) {
	t.Helper()
	const path = "/proc/sys/net/ipv4/tcp_congestion_control"
	err := inNetns(ns, func() error {
		if err := os.WriteFile(path, []byte("reno"), 0); err != nil {
			return err
		}
		b, err := os.ReadFile(path)
		if got := strings.TrimSpace(string(b)); err == nil && got != "reno" {
			err = fmt.Errorf("%s reads %q after writing reno", path, got)
		}
		return err
	})
	if err != nil {
		t.Fatalf("reno in %s: %v", ns, err)
	}
}

// vethIn returns the name of the one veth in namespace ns.
func vethIn(t *testing.T, ns string) string {
	t.Helper()
	out, err := exec.Command("ip", "-n", ns, "-o", "link", "show", "type", "veth").CombinedOutput()
	if err != nil {
		t.Fatalf("ip -n %s link show: %v: %s", ns, err, out)
	}
	// "2: vbhA1234@if2: <BROADCAST,...> ..."
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if _, rest, ok := strings.Cut(lines[0], ": "); ok && len(lines) == 1 {
		name, _, _ := strings.Cut(rest, ":")
		name, _, _ = strings.Cut(name, "@")
		return name
	}
	t.Fatalf("ip -n %s link show type veth:\n%s\nwant one veth", ns, out)
	return ""
}

// inNetns calls f on a thread of its own in network namespace ns, so that
// the sockets f opens belong to ns; they keep it after f returns. The
// thread ends with f, never going back to Go's pool in the wrong
// namespace.
func inNetns(ns string, f func() error) error {
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
		fd, err := os.Open("/run/netns/" + ns)
		if err != nil {
			done <- err
			return
		}
		defer fd.Close()
		if err := unix.Setns(int(fd.Fd()), unix.CLONE_NEWNET); err != nil {
			done <- fmt.Errorf("setns %s: %w", ns, err)
			return
		}
		done <- f()
	}()
	return <-done
}

// bulk is TCP streams writing as fast as they can from one namespace to a
// sink in another that reads and discards: an upload the test controls.
type bulk struct {
	ln      net.Listener
	read    atomic.Uint64 // bytes the sink read
	wg      sync.WaitGroup
	mu      sync.Mutex
	conns   []net.Conn // both ends of every stream
	stopped bool
}

// startBulk starts n streams from address from in namespace fromNS to a
// sink on address to in namespace toNS; they stop with the test, if stop
// has not stopped them before.
func startBulk(t *testing.T, fromNS, toNS, from, to string, n int) *bulk {
	t.Helper()
	b := new(bulk)
	err := inNetns(toNS, func() (err error) {
		b.ln, err = net.Listen("tcp4", net.JoinHostPort(to, "0"))
		return err
	})
	if err != nil {
		t.Fatalf("bulk sink in %s: %v", toNS, err)
	}
	t.Cleanup(b.stop)
	b.wg.Go(b.accept)
	for range n {
		var c net.Conn
		err := inNetns(fromNS, func() (err error) {
			d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}, Timeout: 10 * time.Second}
			c, err = d.Dial("tcp4", b.ln.Addr().String())
			return err
		})
		if err != nil {
			t.Fatalf("bulk stream from %s: %v", fromNS, err)
		}
		if !b.add(c) {
			break
		}
		b.wg.Go(func() {
			buf := make([]byte, 64<<10)
			for {
				// A deadline as a backstop: stop closes the stream
				// long before it.
				c.SetWriteDeadline(time.Now().Add(time.Minute))
				if _, err := c.Write(buf); err != nil {
					return
				}
			}
		})
	}
	return b
}

// add keeps c to close at stop, and reports false (closing c) when stop
// came first.
func (b *bulk) add(c net.Conn) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.stopped {
		c.Close()
		return false
	}
	b.conns = append(b.conns, c)
	return true
}

// accept reads every stream that comes to the sink, until stop.
func (b *bulk) accept() {
	for {
		c, err := b.ln.Accept()
		if err != nil {
			return
		}
		if !b.add(c) {
			return
		}
		b.wg.Go(func() {
			buf := make([]byte, 64<<10)
			for {
				c.SetReadDeadline(time.Now().Add(time.Minute))
				n, err := c.Read(buf)
				b.read.Add(uint64(n))
				if err != nil {
					return
				}
			}
		})
	}
}

// stop closes every stream and the sink, and waits for their goroutines.
func (b *bulk) stop() {
	b.mu.Lock()
	conns := b.conns
	b.conns, b.stopped = nil, true
	b.mu.Unlock()
	b.ln.Close()
	for _, c := range conns {
		c.Close()
	}
	b.wg.Wait()
}
