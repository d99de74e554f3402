package e2e

import (
	"fmt"
	"net"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/volley-net/volley/internal/result"
)

// TestLocalQueueVeth: with a tbf queue (50 Mbit/s, deep) on the client's
// side of a veth pair and a bulk TCP upload through it, the probes wait in
// that queue: the client's local queue (transmit stamp less the
// scheduler's) grows from microseconds to milliseconds, the round trip
// the tool measures holds it, and the kernel's round trip, which starts
// at the transmit stamp taken after the queue, does not.
func TestLocalQueueVeth(t *testing.T) {
	nsA, nsB := vethNamespaces(t, "vlq", 219)
	_, err := exec.LookPath("tc")
	require(t, "netns", err)
	dev := vethDevice(t, nsA)
	if out, err := exec.Command("tc", "-n", nsA, "qdisc", "add", "dev", dev, "root", "tbf",
		"rate", "50mbit", "burst", "32kbit", "latency", "400ms").CombinedOutput(); err != nil {
		require(t, "netns", fmt.Errorf("tc qdisc add tbf: %v: %s", err, strings.TrimSpace(string(out))))
	}
	srv := startServerCmd(t, exec.Command("ip", "netns", "exec", nsB, volley, "server", "--listen", "10.219.0.2:7766", "-q", "--tcp=false"))
	defer func() {
		if err := srv.stop(t, syscall.SIGINT); err != nil {
			t.Errorf("server exit: %v\n%s", err, srv.output())
		}
	}()
	probe := func(phase string) *result.Result {
		t.Helper()
		r := volleyRunIn(t, nsA, "client", srv.addr, "-n", "400", "--rate", "200", "--timestamps", "kernel", "--format", "json")
		if r.code != 0 {
			t.Fatalf("%s client: exit %d: %s", phase, r.code, r.stderr)
		}
		res := parseResult(t, r.stdout)
		if res.Summary.Kernel == nil {
			t.Fatalf("%s run: no kernel figures (timestamps %+v)", phase, res.Timestamps)
		}
		return res
	}
	idle := probe("idle")
	if idle.Summary.Kernel.LocalQueue.Count == 0 {
		t.Skip("skipping: this kernel gave no scheduler stamps (SOF_TIMESTAMPING_TX_SCHED): no local queue to measure")
	}
	stop := bulkUpload(t, nsA, nsB, "10.219.0.2")
	time.Sleep(time.Second) // the flow fills the queue
	loaded := probe("loaded")
	if moved := stop(); moved == 0 {
		t.Fatal("the bulk upload moved nothing")
	}
	p50 := func(l result.Latency) time.Duration {
		for _, p := range l.Percentiles {
			if p.P == 50 {
				return p.Value
			}
		}
		t.Fatalf("no p50 in %+v", l)
		return 0
	}
	ik, lk := idle.Summary.Kernel, loaded.Summary.Kernel
	t.Logf("p50 idle: rtt %v, rtt kern %v, send stack %v, local queue %v", p50(idle.Summary.RTT), p50(ik.RTT), p50(ik.SendStack), p50(ik.LocalQueue))
	t.Logf("p50 loaded: rtt %v, rtt kern %v, send stack %v, local queue %v", p50(loaded.Summary.RTT), p50(lk.RTT), p50(lk.SendStack), p50(lk.LocalQueue))
	if lk.LocalQueue.Count == 0 {
		t.Fatal("the loaded run has no local queue figures")
	}
	if q, q0 := p50(lk.LocalQueue), p50(ik.LocalQueue); q <= 10*q0 {
		t.Errorf("local queue p50 %v under load, %v idle: want it more than 10 times longer", q, q0)
	}
	// Each probe's round trip, as the tool times it, holds its wait in
	// the queue; the kernel's starts after it.
	if rtt, q := p50(loaded.Summary.RTT), p50(lk.LocalQueue); rtt < q {
		t.Errorf("rtt p50 %v under load, below the local queue's %v", rtt, q)
	}
	if rk, q := p50(lk.RTT), p50(lk.LocalQueue); rk >= q {
		t.Errorf("rtt kern p50 %v under load, not below the local queue's %v: the queue is before the transmit stamp", rk, q)
	}
	if s, q := p50(lk.SendStack), p50(lk.LocalQueue); s < q {
		t.Errorf("send stack p50 %v under load, below the local queue's %v, which is part of it", s, q)
	}
}

// vethDevice returns the name of the veth device in namespace ns.
func vethDevice(t *testing.T, ns string) string {
	t.Helper()
	out, err := exec.Command("ip", "-n", ns, "-o", "link", "show", "type", "veth").Output()
	if err != nil {
		t.Fatalf("ip -n %s link show type veth: %v", ns, err)
	}
	f := strings.Fields(string(out))
	if len(f) < 2 {
		t.Fatalf("no veth device in %s: %q", ns, out)
	}
	name, _, _ := strings.Cut(strings.TrimSuffix(f[1], ":"), "@")
	return name
}

// inNetns runs f on a thread of its own in network namespace ns: the
// sockets f opens belong to ns, wherever they are used afterwards. The
// thread is never given back to the scheduler (it ends with f's
// goroutine), so no other goroutine runs in ns.
func inNetns(ns string, f func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // not unlocked: the thread ends with the goroutine
		fd, err := unix.Open("/var/run/netns/"+ns, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			errc <- err
			return
		}
		defer unix.Close(fd)
		if err := unix.Setns(fd, unix.CLONE_NEWNET); err != nil {
			errc <- fmt.Errorf("setns %s: %w", ns, err)
			return
		}
		errc <- f()
	}()
	return <-errc
}

// bulkUpload starts a TCP flow from namespace from to a sink in namespace
// to (at host), as fast as it goes, and returns stop, which ends it and
// returns the bytes the sink read.
func bulkUpload(t *testing.T, from, to, host string) (stop func() int64) {
	t.Helper()
	var ln net.Listener
	if err := inNetns(to, func() (err error) {
		ln, err = net.Listen("tcp", net.JoinHostPort(host, "0"))
		return err
	}); err != nil {
		t.Fatalf("bulk sink: %v", err)
	}
	var c net.Conn
	if err := inNetns(from, func() (err error) {
		c, err = net.DialTimeout("tcp", ln.Addr().String(), 5*time.Second)
		return err
	}); err != nil {
		ln.Close()
		t.Fatalf("bulk upload: %v", err)
	}
	var (
		wg    sync.WaitGroup
		read  atomic.Int64
		werr  error
		sconn net.Conn
	)
	wg.Go(func() { // the sink, until the writer's close arrives
		ln.(*net.TCPListener).SetDeadline(time.Now().Add(10 * time.Second))
		s, err := ln.Accept()
		ln.Close()
		if err != nil {
			return
		}
		sconn = s
		buf := make([]byte, 64<<10)
		for {
			s.SetReadDeadline(time.Now().Add(5 * time.Second))
			n, err := s.Read(buf)
			read.Add(int64(n))
			if err != nil {
				return
			}
		}
	})
	var done atomic.Bool
	wg.Go(func() { // the writer, until stop closes its connection
		buf := make([]byte, 64<<10)
		for {
			c.SetWriteDeadline(time.Now().Add(5 * time.Second))
			if _, err := c.Write(buf); err != nil {
				if !done.Load() {
					werr = err
				}
				return
			}
		}
	})
	return func() int64 {
		done.Store(true)
		c.Close()
		wg.Wait()
		if sconn != nil {
			sconn.Close()
		}
		if werr != nil {
			t.Errorf("bulk upload: %v", werr)
		}
		return read.Load()
	}
}
