// Command hostile attacks a volley reflector on loopback, for
// bench/hostile.sh (issue 14). Each attack is a subcommand, bounded in count
// and time: it sets the attack up, prints "ready" once it is in place, keeps
// it there for -hold (or until SIGINT or SIGTERM), and prints what it did and
// the bytes each of its source addresses sent the reflector and got back
// from it: the reflector's bytes in and out per address.
//
//	hostile held    -target tcp://127.0.0.1:7766 -probes 300       # asks for 4 MiB replies, held 10 ms, and never reads
//	hostile partial -target tcp://127.0.0.1:7766 -conns 200        # 4 MiB frames, all but their last byte
//	hostile churn   -target tcp://127.0.0.1:7766 -waves 5 -conns 200  # connections that send a Hello and close
//	hostile idle    -target tcp://127.0.0.1:7766 -conns 2000       # connections that send nothing
//	hostile flood   -target 127.0.0.1:7766 -ports 1000 -rate 20000 # Hellos from many ports
//	hostile fill    -target 127.0.0.1:7766 -sessions 999           # sessions opened and kept alive
//	hostile replay  -target 127.0.0.1:7766 -victim 127.0.0.9       # a recorded probe replayed from a forged source
//
// The other subcommands serve the script:
//
//	hostile watch -pid N                       # peak RSS and descriptors of process N until it ends
//	hostile term -pid N                        # SIGTERM, and the seconds until N has exited
//	hostile legit -rate 1000 -duration 3s FILE # a volley client's JSON result: lost/expected/p99
//	hostile report FILE                        # the table of rows the script gathered, with verdicts
//
// It attacks nothing but loopback: a -target must be on 127.0.0.0/8, or a
// Unix socket under /tmp. It runs on Linux (raw sockets, /proc, TCP_INFO),
// as root for the forged sources and many source addresses. It is a test
// tool, not part of volley.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"net"
	"net/netip"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/volley-net/volley/internal/wire"
)

func main() { os.Exit(run(os.Args[1:])) }

var commands = map[string]func([]string) error{
	"held":    held,
	"partial": partial,
	"churn":   churn,
	"idle":    idle,
	"flood":   flood,
	"fill":    fill,
	"replay":  replay,
	"watch":   watch,
	"term":    term,
	"legit":   legit,
	"report":  report,
}

func run(args []string) int {
	if len(args) == 0 || commands[args[0]] == nil {
		names := make([]string, 0, len(commands))
		for n := range commands {
			names = append(names, n)
		}
		slices.Sort(names)
		fmt.Fprintf(os.Stderr, "usage: hostile %s [flags]\n", strings.Join(names, "|"))
		return 2
	}
	err := commands[args[0]](args[1:])
	if err == nil || errors.Is(err, flag.ErrHelp) {
		return 0
	}
	fmt.Fprintf(os.Stderr, "hostile %s: %v\n", args[0], err)
	if errors.As(err, new(usageError)) {
		return 2
	}
	return 1
}

type usageError struct{ error }

func usagef(format string, a ...any) error { return usageError{fmt.Errorf(format, a...)} }

// attackFlags are the flags every attack takes.
type attackFlags struct {
	target  string
	sources int
	hold    time.Duration
	limit   time.Duration
}

func (a *attackFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&a.target, "target", "", "the reflector: HOST:PORT or udp://HOST:PORT, tcp://HOST:PORT, unix:///tmp/PATH (loopback only)")
	fs.IntVar(&a.sources, "sources", 1, "source addresses to attack from: 1 is 127.0.0.2; N > 1 are 127.0.1.1 to 127.0.1.N (at most 250)")
	fs.DurationVar(&a.hold, "hold", 5*time.Second, "how long to keep the attack in place once it is ready")
	fs.DurationVar(&a.limit, "limit", 2*time.Minute, "the longest the whole run may take")
}

// parse parses args into fs and returns the target, the source addresses
// and a context ended by SIGINT, SIGTERM or -limit.
func (a *attackFlags) parse(fs *flag.FlagSet, args []string) (context.Context, context.CancelFunc, target, []netip.Addr, error) {
	if err := fs.Parse(args); err != nil {
		return nil, nil, target{}, nil, err
	}
	if fs.NArg() > 0 {
		return nil, nil, target{}, nil, usagef("unexpected arguments %q", fs.Args())
	}
	t, err := parseTarget(a.target)
	if err != nil {
		return nil, nil, target{}, nil, err
	}
	srcs, err := sourceAddrs(a.sources)
	if err != nil {
		return nil, nil, target{}, nil, err
	}
	if a.hold < 0 || a.limit <= 0 {
		return nil, nil, target{}, nil, usagef("-hold %s, -limit %s: want durations of 0 or more, and more than 0", a.hold, a.limit)
	}
	raiseFileLimit()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	ctx, cancel := context.WithTimeout(ctx, a.limit)
	return ctx, func() { cancel(); stop() }, t, srcs, nil
}

// holdOn waits for -hold, or until ctx ends.
func (a *attackFlags) holdOn(ctx context.Context) { sleepCtx(ctx, a.hold) }

// sleepCtx waits for d, or until ctx ends.
func sleepCtx(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

// ready says the attack is in place.
func ready(what string) { fmt.Printf("ready %s\n", what) }

// target is what an attack aims at.
type target struct {
	network string // udp, tcp or unix
	addr    string // HOST:PORT, or the socket's path
	ap      netip.AddrPort
}

func parseTarget(s string) (target, error) {
	if path, ok := strings.CutPrefix(s, "unix://"); ok {
		if c := filepath.Clean(path); !strings.HasPrefix(c, "/tmp/") {
			return target{}, usagef("-target %s: a Unix socket must be under /tmp", s)
		}
		return target{network: "unix", addr: path}, nil
	}
	network, rest := "udp", s
	if r, ok := strings.CutPrefix(s, "tcp://"); ok {
		network, rest = "tcp", r
	} else if r, ok := strings.CutPrefix(s, "udp://"); ok {
		rest = r
	}
	ap, err := netip.ParseAddrPort(rest)
	if err != nil || !ap.Addr().Is4() || !ap.Addr().IsLoopback() || ap.Port() == 0 {
		return target{}, usagef("-target %q: want 127.x.y.z:PORT, with udp:// or tcp://, or unix:///tmp/PATH", s)
	}
	return target{network: network, addr: ap.String(), ap: ap}, nil
}

// sourceAddrs returns the loopback addresses to attack from.
func sourceAddrs(n int) ([]netip.Addr, error) {
	if n == 1 {
		return []netip.Addr{netip.AddrFrom4([4]byte{127, 0, 0, 2})}, nil
	}
	if n < 1 || n > 250 {
		return nil, usagef("-sources %d: want 1 to 250", n)
	}
	a := make([]netip.Addr, n)
	for i := range a {
		a[i] = netip.AddrFrom4([4]byte{127, 0, 1, byte(i + 1)})
	}
	return a, nil
}

// raiseFileLimit lets the attacker hold thousands of sockets (Go raises
// the soft limit to the hard one; root may raise the hard one too).
func raiseFileLimit() {
	var l unix.Rlimit
	if unix.Getrlimit(unix.RLIMIT_NOFILE, &l) != nil {
		return
	}
	want := uint64(1 << 16)
	if l.Max < want {
		if unix.Setrlimit(unix.RLIMIT_NOFILE, &unix.Rlimit{Cur: want, Max: want}) == nil {
			return
		}
	}
	if l.Cur < l.Max {
		l.Cur = l.Max
		_ = unix.Setrlimit(unix.RLIMIT_NOFILE, &l)
	}
}

// ledger counts bytes per source address, from the reflector's side: in
// is what the address sent it, out what it sent the address.
type ledger struct {
	mu sync.Mutex
	by map[string]*[2]uint64
}

func (l *ledger) add(addr string, in, out uint64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.by == nil {
		l.by = make(map[string]*[2]uint64)
	}
	f := l.by[addr]
	if f == nil {
		f = new([2]uint64)
		l.by[addr] = f
	}
	f[0] += in
	f[1] += out
}

// print writes a "bytes ADDR in N out M ratio R" line per address and a
// "bytes-max-ratio R" line: the largest out/in ("-" when nothing came
// back anywhere, "inf" when bytes came back for none sent).
func (l *ledger) print() {
	l.mu.Lock()
	defer l.mu.Unlock()
	addrs := make([]string, 0, len(l.by))
	for a := range l.by {
		addrs = append(addrs, a)
	}
	slices.SortFunc(addrs, compareAddrs)
	worst := math.NaN()
	for _, a := range addrs {
		f := l.by[a]
		r := ratio(f[0], f[1])
		fmt.Printf("bytes %s in %d out %d ratio %s\n", a, f[0], f[1], ratioText(r))
		if !math.IsNaN(r) && (math.IsNaN(worst) || r > worst) {
			worst = r
		}
	}
	fmt.Printf("bytes-max-ratio %s\n", ratioText(worst))
}

// compareAddrs orders ledger keys by address, then by what follows it.
func compareAddrs(a, b string) int {
	aa, arest, _ := strings.Cut(a, " ")
	ba, brest, _ := strings.Cut(b, " ")
	x, errx := netip.ParseAddr(aa)
	y, erry := netip.ParseAddr(ba)
	if errx == nil && erry == nil {
		if c := x.Compare(y); c != 0 {
			return c
		}
		return strings.Compare(arest, brest)
	}
	return strings.Compare(a, b)
}

func ratio(in, out uint64) float64 {
	switch {
	case out == 0:
		return math.NaN()
	case in == 0:
		return math.Inf(1)
	}
	return float64(out) / float64(in)
}

func ratioText(r float64) string {
	switch {
	case math.IsNaN(r):
		return "-"
	case math.IsInf(r, 1):
		return "inf"
	}
	return fmt.Sprintf("%.2f", r)
}

// errorNotes prints the first few errors of a kind to stderr and counts
// the rest.
type errorNotes struct {
	mu   sync.Mutex
	seen map[string]int
}

func (e *errorNotes) note(what string, err error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.seen == nil {
		e.seen = make(map[string]int)
	}
	key := what + ": " + err.Error()
	e.seen[key]++
	if e.seen[key] == 1 && len(e.seen) <= 5 {
		fmt.Fprintf(os.Stderr, "hostile: %s\n", key)
	}
}

func (e *errorNotes) summary() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.seen) == 0 {
		return "none"
	}
	keys := make([]string, 0, len(e.seen))
	for k := range e.seen {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b string) int { return e.seen[b] - e.seen[a] })
	var parts []string
	for _, k := range keys[:min(3, len(keys))] {
		parts = append(parts, fmt.Sprintf("%d× %s", e.seen[k], k))
	}
	return strings.Join(parts, "; ")
}

func nonce() uint64 { return rand.Uint64() | 1 }

// helloHeader is a Hello that opens a session: seq is its nonce, and
// replySize the reply size the session's probes ask for.
func helloHeader(seq uint64, replySize uint32) wire.Header {
	return wire.Header{Type: wire.TypeHello, Seq: seq, T1: time.Now().UnixNano(), ReplySize: replySize}
}

// answersHello reports whether h answers the Hello of nonce n: its Cookie,
// or the Error that refuses it.
func answersHello(h wire.Header, n uint64) bool {
	return h.Seq == n && (h.Type == wire.TypeCookie || h.Type == wire.TypeError)
}

// rawControl runs f on c's descriptor.
func rawControl(c any, f func(fd int)) error {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return errors.ErrUnsupported
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return err
	}
	return raw.Control(func(fd uintptr) { f(int(fd)) })
}

// dialUDP opens a UDP socket from src to t.
func dialUDP(src netip.Addr, t target) (*net.UDPConn, error) {
	return net.DialUDP("udp4", &net.UDPAddr{IP: src.AsSlice()}, net.UDPAddrFromAddrPort(t.ap))
}

// fromEachSource calls do n times, at most 64 at once, with the sources
// taken in turn, until ctx is done; it returns when every call has.
func fromEachSource(ctx context.Context, srcs []netip.Addr, n int, do func(src netip.Addr)) {
	var wg sync.WaitGroup
	sem := make(chan struct{}, 64)
	for i := range n {
		if ctx.Err() != nil {
			break
		}
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			do(srcs[i%len(srcs)])
		})
	}
	wg.Wait()
}
