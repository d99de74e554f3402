package monitor

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"testing/synctest"
	"time"
)

// watchHealth records what a Watcher says: the sets it gives, the
// reloads it reports, the lines it logs.
type watchHealth struct {
	mu      sync.Mutex
	sets    [][]Target
	reloads []string // "source: ok" or "source: error"
	logs    []string
	refuse  error    // Set's answer
	forgot  []string // sources Forget was told of
}

func (h *watchHealth) Targets(n, up int)   {}
func (h *watchHealth) Lag(d time.Duration) {}
func (h *watchHealth) RateScale(f float64) {}
func (h *watchHealth) Forget(s string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.forgot = append(h.forgot, s)
}
func (h *watchHealth) Reload(s string, err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	r := s + ": ok"
	if err != nil {
		r = s + ": error"
	}
	h.reloads = append(h.reloads, r)
}

func (h *watchHealth) set(ts []Target) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.refuse != nil {
		return h.refuse
	}
	h.sets = append(h.sets, ts)
	return nil
}

func (h *watchHealth) log(format string, args ...any) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.logs = append(h.logs, fmt.Sprintf(format, args...))
}

// last returns the names of the last set, and how many sets there were.
func (h *watchHealth) last() ([]string, int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.sets) == 0 {
		return nil, 0
	}
	return targetNames(h.sets[len(h.sets)-1]), len(h.sets)
}

// reloadsOf returns the reloads reported for source.
func (h *watchHealth) reloadsOf(source string) []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	for _, r := range h.reloads {
		if strings.HasPrefix(r, source+": ") {
			out = append(out, strings.TrimPrefix(r, source+": "))
		}
	}
	return out
}

// fakeDNS answers lookups from a table that tests change.
type fakeDNS struct {
	mu    sync.Mutex
	addrs map[string][]netip.Addr
	err   map[string]error
	calls int
}

func (f *fakeDNS) lookup(ctx context.Context, host string) ([]netip.Addr, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	if err := f.err[host]; err != nil {
		return nil, err
	}
	return slices.Clone(f.addrs[host]), nil
}

func (f *fakeDNS) answer(host string, err error, addrs ...string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.err[host] = err
	f.addrs[host] = nil
	for _, a := range addrs {
		f.addrs[host] = append(f.addrs[host], netip.MustParseAddr(a))
	}
}

func newFakeDNS() *fakeDNS {
	return &fakeDNS{addrs: map[string][]netip.Addr{}, err: map[string]error{}}
}

func writeTargets(t *testing.T, path, s string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(s), 0o600); err != nil {
		t.Fatal(err)
	}
}

// runWatcher starts w in the bubble and returns what stops it.
func runWatcher(w *Watcher) func() {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		w.Run(ctx)
	}()
	synctest.Wait()
	return func() { cancel(); <-done }
}

func TestWatchReloadKeepsLastGood(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "targets.yaml")
		writeTargets(t, path, "targets:\n  - {name: a, url: udp://10.0.0.1}\n")
		h := &watchHealth{}
		hup := make(chan os.Signal, 1)
		w := NewWatcher(WatchConfig{
			Targets: []Target{{Name: "flag", URL: "udp://10.0.0.9", Source: "flag"}},
			File:    path, Reload: hup, Set: h.set, Health: h, Log: h.log,
			Poll: time.Hour, // SIGHUP only
		})
		if err := w.Load(context.Background()); err != nil {
			t.Fatalf("Load = %v", err)
		}
		stop := runWatcher(w)
		defer stop()
		if got, _ := h.last(); !slices.Equal(got, []string{"flag", "a"}) {
			t.Fatalf("first set %v, want [flag a]", got)
		}
		writeTargets(t, path, "targets:\n  - {name: a, url: udp://10.0.0.1}\n  - {name: b, url: udp://10.0.0.2, colour: red}\n")
		hup <- syscall.SIGHUP
		synctest.Wait()
		if got, n := h.last(); n != 1 || !slices.Equal(got, []string{"flag", "a"}) {
			t.Errorf("after a bad file: %d sets, last %v; want 1, [flag a] kept", n, got)
		}
		writeTargets(t, path, "targets:\n  - {name: a, url: udp://10.0.0.1}\n  - {name: b, url: udp://10.0.0.2}\n")
		hup <- syscall.SIGHUP
		synctest.Wait()
		if got, n := h.last(); n != 2 || !slices.Equal(got, []string{"flag", "a", "b"}) {
			t.Errorf("after the fix: %d sets, last %v; want 2, [flag a b]", n, got)
		}
		if got := h.reloadsOf("file:" + path); !slices.Equal(got, []string{"ok", "error", "ok"}) {
			t.Errorf("reloads %v, want [ok error ok]", got)
		}
		if len(h.logs) != 1 || !strings.Contains(h.logs[0], "line 3") || !strings.Contains(h.logs[0], "colour") {
			t.Errorf("logs %q, want one line naming line 3 and the unknown field", h.logs)
		}
	})
}

func TestWatchSetRefusedKeepsLastGood(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "targets.yaml")
		writeTargets(t, path, "targets:\n  - {name: a, url: udp://10.0.0.1}\n")
		h := &watchHealth{}
		hup := make(chan os.Signal, 1)
		w := NewWatcher(WatchConfig{File: path, Reload: hup, Set: h.set, Health: h, Log: h.log})
		stop := runWatcher(w)
		defer stop()
		h.mu.Lock()
		h.refuse = errors.New("target b: bad schedule")
		h.mu.Unlock()
		writeTargets(t, path, "targets:\n  - {name: b, url: udp://10.0.0.2}\n")
		time.Sleep(DefaultPoll)
		synctest.Wait()
		if got := h.reloadsOf("file:" + path); !slices.Equal(got, []string{"ok", "error"}) {
			t.Errorf("reloads %v, want [ok error]", got)
		}
		h.mu.Lock()
		h.refuse = nil
		h.mu.Unlock()
		// The same content is not read again on a poll, but on SIGHUP
		// it is.
		time.Sleep(DefaultPoll)
		synctest.Wait()
		if got, n := h.last(); n != 1 || !slices.Equal(got, []string{"a"}) {
			t.Errorf("after a refused set: %d sets, last %v; want 1, [a]", n, got)
		}
		hup <- syscall.SIGHUP
		synctest.Wait()
		if got, n := h.last(); n != 2 || !slices.Equal(got, []string{"b"}) {
			t.Errorf("after SIGHUP: %d sets, last %v; want 2, [b]", n, got)
		}
	})
}

func TestWatchContentChange(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dir := t.TempDir()
		path := filepath.Join(dir, "targets.yaml")
		writeTargets(t, path, "targets:\n  - {name: a, url: udp://10.0.0.1}\n")
		h := &watchHealth{}
		w := NewWatcher(WatchConfig{File: path, Set: h.set, Health: h, Log: h.log, Poll: 5 * time.Second})
		stop := runWatcher(w)
		defer stop()
		// Unchanged content: no read reported, no set.
		time.Sleep(20 * time.Second)
		synctest.Wait()
		if got, n := h.last(); n != 1 || len(h.reloadsOf("file:"+path)) != 1 {
			t.Fatalf("unchanged file: %d sets (last %v), %d reloads; want 1 and 1", n, got, len(h.reloadsOf("file:"+path)))
		}
		// Written in place: seen at the next poll, not before.
		writeTargets(t, path, "targets:\n  - {name: b, url: udp://10.0.0.2}\n")
		time.Sleep(4 * time.Second)
		synctest.Wait()
		if _, n := h.last(); n != 1 {
			t.Errorf("before the poll: %d sets, want 1", n)
		}
		time.Sleep(time.Second)
		synctest.Wait()
		if got, _ := h.last(); !slices.Equal(got, []string{"b"}) {
			t.Errorf("after an in-place write: %v, want [b]", got)
		}
		// Replaced by a rename.
		tmp := filepath.Join(dir, "new.yaml")
		writeTargets(t, tmp, "targets:\n  - {name: c, url: udp://10.0.0.3}\n")
		if err := os.Rename(tmp, path); err != nil {
			t.Fatal(err)
		}
		time.Sleep(5 * time.Second)
		synctest.Wait()
		if got, _ := h.last(); !slices.Equal(got, []string{"c"}) {
			t.Errorf("after a rename: %v, want [c]", got)
		}
		// Removed: a failed read, the set kept.
		os.Remove(path)
		time.Sleep(5 * time.Second)
		synctest.Wait()
		if got, n := h.last(); n != 3 || !slices.Equal(got, []string{"c"}) {
			t.Errorf("after a removal: %d sets, last %v; want 3, [c] kept", n, got)
		}
		if got := h.reloadsOf("file:" + path); !slices.Equal(got, []string{"ok", "ok", "ok", "error"}) {
			t.Errorf("reloads %v, want [ok ok ok error]", got)
		}
	})
}

// TestWatchConfigMapSwap swaps the file as the kubelet updates a mounted
// ConfigMap: the path is a link to ..data/NAME, and ..data a link to a
// timestamped directory, replaced by a rename of a new link.
func TestWatchConfigMapSwap(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dir := t.TempDir()
		version := func(name, body string) {
			d := filepath.Join(dir, name)
			if err := os.Mkdir(d, 0o700); err != nil {
				t.Fatal(err)
			}
			writeTargets(t, filepath.Join(d, "targets.yaml"), body)
			if err := os.Symlink(name, filepath.Join(dir, "..data_tmp")); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(filepath.Join(dir, "..data_tmp"), filepath.Join(dir, "..data")); err != nil {
				t.Fatal(err)
			}
		}
		version("..v1", "targets:\n  - {name: a, url: udp://10.0.0.1}\n")
		path := filepath.Join(dir, "targets.yaml")
		if err := os.Symlink("..data/targets.yaml", path); err != nil {
			t.Fatal(err)
		}
		h := &watchHealth{}
		w := NewWatcher(WatchConfig{File: path, Set: h.set, Health: h, Log: h.log})
		stop := runWatcher(w)
		defer stop()
		version("..v2", "targets:\n  - {name: b, url: udp://10.0.0.2}\n")
		os.RemoveAll(filepath.Join(dir, "..v1"))
		time.Sleep(DefaultPoll)
		synctest.Wait()
		if got, n := h.last(); n != 2 || !slices.Equal(got, []string{"b"}) {
			t.Errorf("after the swap: %d sets, last %v; want 2, [b]", n, got)
		}
	})
}

func TestWatchDNS(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dns := newFakeDNS()
		dns.answer("svc.test", errors.New("no such host"))
		h := &watchHealth{}
		w := NewWatcher(WatchConfig{
			Targets: []Target{{Name: "svc", URL: "udp://svc.test:7766", Source: "flag"}, {Name: "ip", URL: "udp://10.0.0.9", Source: "flag"}},
			Lookup:  dns.lookup, Set: h.set, Health: h, Log: h.log, ResolveEvery: 10 * time.Second,
		})
		// The first lookup fails: not fatal, the name has no targets yet.
		if err := w.Load(context.Background()); err != nil {
			t.Fatalf("Load with a failing lookup = %v, want nil", err)
		}
		stop := runWatcher(w)
		defer stop()
		if got, _ := h.last(); !slices.Equal(got, []string{"ip"}) {
			t.Fatalf("first set %v, want [ip]", got)
		}
		dns.answer("svc.test", nil, "10.0.0.2", "10.0.0.1")
		time.Sleep(10 * time.Second)
		synctest.Wait()
		if got, _ := h.last(); !slices.Equal(got, []string{"svc/10.0.0.1", "svc/10.0.0.2", "ip"}) {
			t.Fatalf("after a good lookup %v, want [svc/10.0.0.1 svc/10.0.0.2 ip]", got)
		}
		h.mu.Lock()
		if u := h.sets[len(h.sets)-1][0]; u.URL != "udp://10.0.0.1:7766" || u.Source != "dns" {
			t.Errorf("expanded target %+v, want URL udp://10.0.0.1:7766 from dns", u)
		}
		h.mu.Unlock()
		// An address added, one removed.
		dns.answer("svc.test", nil, "10.0.0.3", "10.0.0.2", "fd00::1")
		time.Sleep(10 * time.Second)
		synctest.Wait()
		if got, _ := h.last(); !slices.Equal(got, []string{"svc/10.0.0.2", "svc/10.0.0.3", "svc/fd00::1", "ip"}) {
			t.Fatalf("after a change %v, want [svc/10.0.0.2 svc/10.0.0.3 svc/fd00::1 ip]", got)
		}
		// The same answer: no new set. A failure: the last kept.
		_, n := h.last()
		time.Sleep(10 * time.Second)
		synctest.Wait()
		dns.answer("svc.test", errors.New("timeout"))
		time.Sleep(10 * time.Second)
		synctest.Wait()
		if got, m := h.last(); m != n || len(got) != 4 {
			t.Errorf("after the same answer and a failure: %d sets (%v), want %d", m, got, n)
		}
		if got := h.reloadsOf("dns:svc.test"); !slices.Equal(got, []string{"error", "ok", "ok", "ok", "error"}) {
			t.Errorf("dns reloads %v, want [error ok ok ok error]", got)
		}
	})
}

func TestDNSCapsAddresses(t *testing.T) {
	dns := newFakeDNS()
	var many []string
	for i := range MaxAddresses + 36 {
		many = append(many, fmt.Sprintf("10.1.%d.%d", i/200, i%200+1))
	}
	dns.answer("big.test", nil, many...)
	h := &watchHealth{}
	c := newDNSCache(dns.lookup, 0, h, h.log)
	for range 2 {
		c.resolve(context.Background(), []string{"big.test"})
	}
	ps := c.expand([]Peer{{Target: Target{Name: "big", URL: "tcp://big.test:9"}}})
	if len(ps) != MaxAddresses || ps[0].Name != "big/10.1.0.1" || ps[0].URL != "tcp://10.1.0.1:9" {
		t.Errorf("expand = %d targets, first %+v; want %d, big/10.1.0.1 at tcp://10.1.0.1:9", len(ps), ps[0].Target, MaxAddresses)
	}
	if len(h.logs) != 1 {
		t.Errorf("logs %q, want one line about the cap", h.logs)
	}
}

func TestDNSName(t *testing.T) {
	for url, want := range map[string]string{
		"udp://svc.test:7766": "svc.test",
		"tcp://localhost":     "localhost",
		"svc.test":            "svc.test",
		"udp://10.0.0.1:7766": "",
		"udp://[::1]:7766":    "",
		"unix:///run/v.sock":  "",
		"dbus://session":      "",
		"ftp://x":             "",
	} {
		if got := dnsName(url); got != want {
			t.Errorf("dnsName(%q) = %q, want %q", url, got, want)
		}
	}
}

func TestWatchMeshSelect(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dns := newFakeDNS()
		dns.answer("peers.test", nil, "10.0.0.1", "10.0.0.2", "10.0.0.3")
		h := &watchHealth{}
		local := []netip.Addr{netip.MustParseAddr("10.0.0.2")}
		w := NewWatcher(WatchConfig{
			Targets: []Target{{Name: "peers", URL: "udp://peers.test:7766"}},
			Lookup:  dns.lookup, Set: h.set, Health: h, Log: h.log,
			Select: func(ps []Peer) ([]Target, error) {
				ps = AddressPeers(ps)
				self, err := FindSelf("", ps, local)
				if err != nil {
					return nil, err
				}
				return Mesh(self, "", ps, 8, 32), nil
			},
		})
		stop := runWatcher(w)
		defer stop()
		if got, _ := h.last(); !slices.Equal(slices.Sorted(slices.Values(got)), []string{"10.0.0.1", "10.0.0.3"}) {
			t.Errorf("mesh set %v, want the two other peers by address", got)
		}
		// Self gone from the Service: the last set kept, said in the log.
		dns.answer("peers.test", nil, "10.0.0.1", "10.0.0.3")
		time.Sleep(DefaultResolveEvery)
		synctest.Wait()
		if got, n := h.last(); n != 1 || len(got) != 2 {
			t.Errorf("without self: %d sets, last %v; want the first kept", n, got)
		}
		if len(h.logs) != 1 || !strings.Contains(h.logs[0], "self not found") {
			t.Errorf("logs %q, want one line saying self was not found", h.logs)
		}
	})
}

func TestWatchBadFileAtStart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "targets.yaml")
		writeTargets(t, path, "targets:\n  - {name: a, url: udp://10.0.0.1, rate: fast}\n")
		h := &watchHealth{}
		w := NewWatcher(WatchConfig{Targets: []Target{{Name: "flag", URL: "udp://10.0.0.9"}}, File: path, Set: h.set, Health: h, Log: h.log})
		err := w.Load(context.Background())
		if err == nil || !errors.Is(err, ErrFile) || !strings.Contains(err.Error(), "line 2") {
			t.Fatalf("Load(bad file) = %v, want an ErrFile naming line 2", err)
		}
		stop := runWatcher(w)
		defer stop()
		if got, n := h.last(); n != 1 || !slices.Equal(got, []string{"flag"}) {
			t.Errorf("with a bad file at start: %d sets, last %v; want the flags' [flag]", n, got)
		}
		writeTargets(t, path, "targets:\n  - {name: a, url: udp://10.0.0.1, rate: 5}\n")
		time.Sleep(DefaultPoll)
		synctest.Wait()
		if got, _ := h.last(); !slices.Equal(got, []string{"flag", "a"}) {
			t.Errorf("after the fix: %v, want [flag a]", got)
		}
	})
}

// TestDNSForgetsNames: a name no target names any more is forgotten, and
// Health told, so that a failure reported of it does not stay for ever.
func TestDNSForgetsNames(t *testing.T) {
	dns := newFakeDNS()
	dns.answer("gone.test", errors.New("no such host"))
	dns.answer("kept.test", nil, "10.0.0.1")
	h := &watchHealth{}
	c := newDNSCache(dns.lookup, 0, h, h.log)
	c.resolveOne(context.Background(), "gone.test")
	c.resolveOne(context.Background(), "kept.test")
	c.keep([]string{"kept.test"})
	h.mu.Lock()
	defer h.mu.Unlock()
	if !slices.Equal(h.forgot, []string{"dns:gone.test"}) {
		t.Fatalf("forgotten %q, want [dns:gone.test]", h.forgot)
	}
}
