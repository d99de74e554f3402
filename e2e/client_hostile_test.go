package e2e

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/volley-net/volley/internal/wire"
)

// Issue 14, the client's side: a client ends within max(--timeout, 1s) of
// its deadline or a signal, whatever its reflector does, and prints its
// report. The reflectors here are fakes that speak the stream framing (a
// 4-byte big-endian length, then the message) and misbehave on purpose.

// slack is what the bounds below allow on top of the client's own:
// starting the (race-built) process, the handshake, a loaded machine.
const slack = 2 * time.Second

// fakeStream is a stream "reflector" that answers each connection's Hello
// with a Cookie and then does what serve says with the connection. It
// stops, and closes what it opened, when the test ends.
type fakeStream struct {
	target string // tcp://ADDR or unix:///PATH
	hello  chan struct{}
	done   chan struct{} // closed when the test ends: serve returns
}

const fakeToken = 0x766f6c6c6579

func startFakeStream(t *testing.T, network string, serve func(f *fakeStream, c net.Conn)) *fakeStream {
	t.Helper()
	addr := "127.0.0.1:0"
	if network == "unix" {
		dir, err := os.MkdirTemp("", "vh") // short: a socket path has at most 107 bytes
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(dir) })
		addr = filepath.Join(dir, "s")
	}
	ln, err := net.Listen(network, addr)
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeStream{target: network + "://" + ln.Addr().String(), hello: make(chan struct{}, 16), done: make(chan struct{})}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			wg.Go(func() {
				msg, err := readFrame(c)
				var h wire.Header
				if err != nil || h.Decode(msg) != nil || h.Type != wire.TypeHello {
					return
				}
				cookie := wire.Header{Type: wire.TypeCookie, Token: fakeToken, Seq: h.Seq, T1: h.T1}
				out := make([]byte, wire.HeaderLen)
				_ = cookie.Encode(out)
				if writeFrame(c, out) != nil {
					return
				}
				f.hello <- struct{}{}
				serve(f, c)
			})
		}
	})
	t.Cleanup(func() {
		close(f.done)
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return f
}

// waitHello waits until the fake has answered a Hello.
func (f *fakeStream) waitHello(t *testing.T) {
	t.Helper()
	select {
	case <-f.hello:
	case <-time.After(20 * time.Second):
		t.Fatal("the client sent no Hello within 20s")
	}
}

func readFrame(r io.Reader) ([]byte, error) {
	var n [4]byte
	if _, err := io.ReadFull(r, n[:]); err != nil {
		return nil, err
	}
	size := binary.BigEndian.Uint32(n[:])
	if size > 8<<20 {
		return nil, errors.New("frame too large for the fake")
	}
	msg := make([]byte, size)
	_, err := io.ReadFull(r, msg)
	return msg, err
}

func writeFrame(w io.Writer, msg []byte) error {
	out := binary.BigEndian.AppendUint32(nil, uint32(len(msg)))
	_, err := w.Write(append(out, msg...))
	return err
}

// stopReading is a reflector that takes the Hello and then reads nothing
// more (nor answers) until the test ends.
func stopReading(f *fakeStream, c net.Conn) { <-f.done }

// reflectThen answers the first n probes as a reflector would, then
// writes raw, the bytes of a broken frame, and reads nothing more.
func reflectThen(n int, raw []byte) func(f *fakeStream, c net.Conn) {
	return func(f *fakeStream, c net.Conn) {
		for i := 1; i <= n; i++ {
			msg, err := readFrame(c)
			var h wire.Header
			if err != nil || h.Decode(msg) != nil {
				return
			}
			now := time.Now().UnixNano()
			h.Type, h.T2, h.T3, h.Received = wire.TypeReply, now, now, uint64(i)
			_ = h.Encode(msg)
			if writeFrame(c, msg) != nil {
				return
			}
		}
		if _, err := c.Write(raw); err != nil {
			return
		}
		<-f.done
	}
}

// proc is a volley process a test started.
type proc struct {
	cmd            *exec.Cmd
	stdout, stderr bytes.Buffer
	start          time.Time
	done           chan error
}

func startVolley(t *testing.T, args ...string) *proc {
	t.Helper()
	p := &proc{cmd: exec.Command(volley, args...), done: make(chan error, 1)}
	p.cmd.Stdout, p.cmd.Stderr = &p.stdout, &p.stderr
	// A race-built binary sleeps 1s as it exits, unless told not to: the
	// bounds here are the client's own.
	p.cmd.Env = append(os.Environ(), "GORACE="+strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0"))
	p.start = time.Now()
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.done <- p.cmd.Wait() }()
	t.Cleanup(func() {
		if p.cmd.ProcessState == nil {
			p.cmd.Process.Kill()
			<-p.done
		}
	})
	return p
}

// waitExit waits, up to limit from now, for cmd, a volley process whose
// Wait's error done gives, to exit. It returns the exit code and when the
// exit was seen; after limit it kills cmd and the test fails, with what
// output says the process printed.
func waitExit(t *testing.T, cmd *exec.Cmd, done <-chan error, limit time.Duration, output func() string) (int, time.Time) {
	t.Helper()
	select {
	case err := <-done:
		exited := time.Now()
		var ee *exec.ExitError
		switch {
		case err == nil:
			return 0, exited
		case errors.As(err, &ee):
			return ee.ExitCode(), exited
		}
		t.Fatalf("volley %s: %v", strings.Join(cmd.Args[1:], " "), err)
	case <-time.After(limit):
		cmd.Process.Kill()
		<-done
		t.Fatalf("volley %s did not exit within %v of being waited for: killed\n%s", strings.Join(cmd.Args[1:], " "), limit, output())
	}
	return 0, time.Time{}
}

// wait waits for the process to exit, for at most limit; after that it is
// killed and the test fails. It returns the exit code and how long the
// process ran.
func (p *proc) wait(t *testing.T, limit time.Duration) (int, time.Duration) {
	t.Helper()
	code, exited := waitExit(t, p.cmd, p.done, limit, func() string {
		return fmt.Sprintf("stdout:\n%.2000s\nstderr:\n%.2000s", p.stdout.String(), p.stderr.String())
	})
	return code, exited.Sub(p.start)
}

// TestClientStalledWrite: a stream reflector that stops reading fills the
// client's socket buffers, and a write blocks. The client still ends
// within max(--timeout, 1s) of its run's end, with its report, and says
// what happened.
func TestClientStalledWrite(t *testing.T) {
	for _, tt := range []struct {
		name, network string
		shape         []string
	}{
		// Unix sockets buffer less: smaller probes fill them, after a few.
		{"tcp window", "tcp", []string{"--window", "16", "--size", "1M"}},
		{"unix window", "unix", []string{"--window", "16", "--size", "100K"}},
		{"tcp open loop", "tcp", []string{"--rate", "200", "--size", "1M"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := startFakeStream(t, tt.network, stopReading)
			args := append([]string{"client", f.target, "-t", "2s", "--timeout", "500ms", "--format", "json"}, tt.shape...)
			p := startVolley(t, args...)
			code, ran := p.wait(t, 30*time.Second)
			t.Logf("exit %d after %v: %s", code, ran.Round(time.Millisecond), strings.TrimSpace(p.stderr.String()))
			if code != 1 {
				t.Errorf("exit %d, want 1 (stderr %q)", code, p.stderr.String())
			}
			res := parseResult(t, p.stdout.String())
			checkCounts(t, res)
			// The run measures for 2s after the handshake (the result's
			// start, on the wall clock); then it has max(--timeout, 1s)
			// to end. From the process's start, a loaded machine's slow
			// start and handshake would count too (CI once saw 3s).
			if took, bound := sinceStart(res, p.start.Add(ran)), 2*time.Second+time.Second+slack; took > bound {
				t.Errorf("the client took %v to end after its handshake, want at most %v", took, bound)
			}
			// A closed-loop client notices the write that does not end; an
			// open-loop one may notice the silence of the replies first.
			want := []string{"reflector stopped reading"}
			if tt.shape[0] == "--rate" {
				want = append(want, "reflector went silent")
			}
			found := false
			for _, w := range want {
				found = found || (strings.Contains(res.Error, w) && strings.Contains(p.stderr.String(), w))
			}
			if !found || res.Summary.Counts.Sent == 0 {
				t.Errorf("result error %q, stderr %q, counts %+v: want one of %q and probes sent", res.Error, p.stderr.String(), res.Summary.Counts, want)
			}
		})
	}
}

// TestClientStalledWriteSignal: a signal ends a client stuck writing to a
// reflector that stopped reading within max(--timeout, 1s), with a report.
func TestClientStalledWriteSignal(t *testing.T) {
	t.Parallel() // it mostly waits (see the package doc)
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP} {
		t.Run(sig.String(), func(t *testing.T) {
			f := startFakeStream(t, "tcp", stopReading)
			p := startVolley(t, "client", f.target, "-t", "1m", "--size", "1M", "--window", "16", "--format", "json")
			f.waitHello(t)
			time.Sleep(500 * time.Millisecond) // the probes fill the buffers, and a write blocks
			sent := time.Now()
			if err := p.cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			code, _ := p.wait(t, 30*time.Second)
			took := time.Since(sent)
			t.Logf("exit %d %v after %v: %s", code, took.Round(time.Millisecond), sig, strings.TrimSpace(p.stderr.String()))
			if took > time.Second+slack {
				t.Errorf("the client took %v to end after %v, want at most %v", took, sig, time.Second+slack)
			}
			if code != 1 {
				t.Errorf("exit %d after %v, want 1: the reflector stopped reading (stderr %q)", code, sig, p.stderr.String())
			}
			res := parseResult(t, p.stdout.String())
			checkCounts(t, res)
			if !strings.Contains(res.Error, "reflector stopped reading") || res.Summary.Counts.Sent == 0 {
				t.Errorf("result error %q, counts %+v: want the stall named, and probes sent", res.Error, res.Summary.Counts)
			}
		})
	}
}

// TestClientSignals: SIGINT, SIGTERM and SIGHUP each stop a client, which
// prints its whole report (a complete JSON document) and exits 0.
func TestClientSignals(t *testing.T) {
	t.Parallel() // it mostly waits (see the package doc)
	srv := startServer(t, "127.0.0.1:0", "-q")
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP} {
		t.Run(sig.String(), func(t *testing.T) {
			logPath := filepath.Join(t.TempDir(), "probes.csv")
			p := startVolley(t, "client", srv.addr, "-t", "1m", "-i", "100ms", "--format", "json", "--log", logPath)
			// The signal must come once the run measures, however long a
			// loaded machine takes to start it: the probe log's first
			// lines say it does.
			for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
				if b, err := os.ReadFile(logPath); err == nil && bytes.Count(b, []byte("\n")) > 1 { // the header, then probes
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("no probe logged in 30s (stderr %q)", p.stderr.String())
				}
			}
			time.Sleep(time.Second) // several 100ms intervals
			sent := time.Now()
			if err := p.cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			code, _ := p.wait(t, 30*time.Second)
			took := time.Since(sent)
			t.Logf("exit %d %v after %v", code, took.Round(time.Millisecond), sig)
			if took > time.Second+slack {
				t.Errorf("the client took %v to end after %v, want at most %v", took, sig, time.Second+slack)
			}
			if code != 0 {
				t.Fatalf("exit %d after %v, want 0 (stderr %q)", code, sig, p.stderr.String())
			}
			res := parseResult(t, p.stdout.String())
			checkCounts(t, res)
			if res.Stopped != "interrupted" || res.ReflectorCount != "close" || res.Summary.Counts.Sent == 0 || len(res.Intervals) < 3 {
				t.Errorf("after %v: stopped %q, count from %q, counts %+v, %d intervals: want interrupted, close, probes and intervals",
					sig, res.Stopped, res.ReflectorCount, res.Summary.Counts, len(res.Intervals))
			}
		})
	}
	if err := srv.stop(t, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
}

// TestClientBrokenFraming: a reply frame of 0xFFFFFFFF bytes (more than a
// stream carries) ends the run at once with an error that says so, and
// the partial results.
func TestClientBrokenFraming(t *testing.T) {
	for _, tt := range []struct {
		name, network string
		shape         []string
	}{
		{"tcp ping-pong", "tcp", nil},
		{"unix ping-pong", "unix", nil},
		{"tcp open loop", "tcp", []string{"--rate", "1000"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := startFakeStream(t, tt.network, reflectThen(5, []byte{0xff, 0xff, 0xff, 0xff, 1, 2, 3}))
			args := append([]string{"client", f.target, "-t", "5s", "--format", "json"}, tt.shape...)
			p := startVolley(t, args...)
			code, took := p.wait(t, 30*time.Second)
			t.Logf("exit %d after %v: %s", code, took.Round(time.Millisecond), strings.TrimSpace(p.stderr.String()))
			if took > slack {
				t.Errorf("the client took %v to end, want it to end at the broken frame", took)
			}
			want := "a frame of 4294967295 bytes (the most is 4194304)"
			if code != 1 || !strings.Contains(p.stderr.String(), want) {
				t.Errorf("exit %d, stderr %q: want 1 and %q", code, p.stderr.String(), want)
			}
			res := parseResult(t, p.stdout.String())
			checkCounts(t, res)
			c := res.Summary.Counts
			if !strings.Contains(res.Error, want) || c.Received != 5 || c.Errors > 1 {
				t.Errorf("result error %q, counts %+v: want %q, the 5 replies and at most one error", res.Error, c, want)
			}
		})
	}
}
