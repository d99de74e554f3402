package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/volley-net/volley/internal/wire"
)

func wantUDP(t target) error {
	if t.network != "udp" {
		return usagef("-target %s: this attack wants a UDP address", t.addr)
	}
	return nil
}

// readCounting reads c until it is closed, adding what it reads to in,
// and calls f (if not nil) with each message's header.
func readCounting(c *net.UDPConn, in *atomic.Uint64, f func(wire.Header)) {
	buf := make([]byte, 70000)
	for failures := 0; failures < 10000; {
		n, err := c.Read(buf)
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			failures++ // ICMP errors of earlier sends
			continue
		}
		in.Add(uint64(n))
		var h wire.Header
		if f != nil && h.Decode(buf[:n]) == nil {
			f(h)
		}
	}
}

// exchange sends msg on c, to dst (nil: c's peer), until a message for
// which want is true comes back, up to 3 times a second apart, and returns
// it and its length. sent and got, when not nil, count the bytes written
// and read.
func exchange(c *net.UDPConn, dst *net.UDPAddr, msg []byte, want func(wire.Header) bool, sent, got *atomic.Uint64) (wire.Header, int, error) {
	buf := make([]byte, 70000)
	for try := 0; try < 3; try++ {
		var err error
		if dst != nil {
			_, err = c.WriteToUDP(msg, dst)
		} else {
			_, err = c.Write(msg)
		}
		if err != nil {
			return wire.Header{}, 0, err
		}
		if sent != nil {
			sent.Add(uint64(len(msg)))
		}
		_ = c.SetReadDeadline(time.Now().Add(time.Second))
		for {
			n, err := c.Read(buf)
			if err != nil {
				if errors.Is(err, net.ErrClosed) {
					return wire.Header{}, 0, err
				}
				break
			}
			if got != nil {
				got.Add(uint64(n))
			}
			var h wire.Header
			if h.Decode(buf[:n]) == nil && want(h) {
				_ = c.SetReadDeadline(time.Time{})
				return h, n, nil
			}
		}
	}
	return wire.Header{}, 0, errors.New("no answer to 3 tries")
}

// floodPort is one of flood's source ports.
type floodPort struct {
	c       *net.UDPConn
	src     string
	in, out atomic.Uint64 // the reflector's view
}

// flood: Hellos from -ports UDP ports at -rate in all.
func flood(args []string) error {
	fs := flag.NewFlagSet("flood", flag.ContinueOnError)
	var af attackFlags
	af.register(fs)
	ports := fs.Int("ports", 1000, "source ports, spread over the source addresses")
	rate := fs.Float64("rate", 20000, "Hellos/s in all")
	ctx, cancel, t, srcs, err := af.parse(fs, args)
	if err != nil {
		return err
	}
	defer cancel()
	if err := wantUDP(t); err != nil {
		return err
	}
	if *ports < 1 || *ports > 30000 || *rate <= 0 || *rate > 1e6 {
		return usagef("want -ports 1 to 30000, -rate above 0 and at most 1e6")
	}
	var errs errorNotes
	socks := openPorts(t, srcs, *ports, &errs)
	if len(socks) == 0 {
		return fmt.Errorf("no socket opened: %s", errs.summary())
	}
	var cookies, refusals atomic.Int64
	var wg sync.WaitGroup
	for _, p := range socks {
		wg.Go(func() {
			readCounting(p.c, &p.out, func(h wire.Header) {
				switch h.Type {
				case wire.TypeCookie:
					cookies.Add(1)
				case wire.TypeError:
					refusals.Add(1)
				}
			})
		})
	}
	ready(fmt.Sprintf("%d ports from %d addresses, %.0f Hellos/s", len(socks), len(srcs), *rate))
	start := time.Now()
	sent := floodHellos(ctx, start, socks, *rate, af.hold, &errs)
	time.Sleep(200 * time.Millisecond) // the last answers
	for _, p := range socks {
		p.c.Close()
	}
	wg.Wait()
	var l ledger
	for _, p := range socks {
		l.add(p.src, p.in.Load(), p.out.Load())
	}
	fmt.Printf("flood: %d Hellos from %d ports on %d addresses in %s (%.0f/s); answered with %d cookies and %d refusals; send errors: %s\n",
		sent, len(socks), len(srcs), time.Since(start).Round(time.Millisecond), float64(sent)/time.Since(start).Seconds(), cookies.Load(), refusals.Load(), errs.summary())
	l.print()
	return nil
}

// openPorts opens n UDP sockets to t, spread over the sources; the ones
// that fail are noted in errs and left out.
func openPorts(t target, srcs []netip.Addr, n int, errs *errorNotes) []*floodPort {
	var socks []*floodPort
	for i := range n {
		c, err := dialUDP(srcs[i%len(srcs)], t)
		if err != nil {
			errs.note("open a socket", err)
			continue
		}
		socks = append(socks, &floodPort{c: c, src: srcs[i%len(srcs)].String()})
	}
	return socks
}

// floodHellos sends Hellos round the ports at rate in all, from start
// until hold has passed or ctx ends, and returns how many it sent.
func floodHellos(ctx context.Context, start time.Time, socks []*floodPort, rate float64, hold time.Duration, errs *errorNotes) int {
	msg := make([]byte, wire.HeaderLen)
	sent := 0
	for ctx.Err() == nil {
		el := time.Since(start)
		if el >= hold {
			break
		}
		due := min(int(rate*el.Seconds())-sent, max(1, int(rate/100)))
		for range due {
			p := socks[sent%len(socks)]
			h := helloHeader(nonce(), wire.HeaderLen)
			_ = h.Encode(msg)
			if _, err := p.c.Write(msg); err != nil {
				errs.note("send", err)
			} else {
				p.in.Add(uint64(len(msg)))
			}
			sent++
		}
		time.Sleep(time.Millisecond)
	}
	return sent
}

// udpSession is one session of fill.
type udpSession struct {
	c            *net.UDPConn
	src          string
	token, nonce uint64
	seq          uint64
	in, out      atomic.Uint64 // the reflector's view
	replies      atomic.Int64
}

// exchange sends msg until a message for which want is true comes back,
// up to 3 times a second apart, and returns it.
func (s *udpSession) exchange(msg []byte, want func(wire.Header) bool) (wire.Header, error) {
	h, _, err := exchange(s.c, nil, msg, want, &s.in, &s.out)
	return h, err
}

// fill: -sessions sessions opened (Hello, Cookie, a probe) and kept alive
// with a probe per session every -keepalive.
func fill(args []string) error {
	fs := flag.NewFlagSet("fill", flag.ContinueOnError)
	var af attackFlags
	af.register(fs)
	sessions := fs.Int("sessions", 999, "sessions to open, each its own port, spread over the source addresses")
	keepalive := fs.Duration("keepalive", time.Second, "how often each session sends a probe once open")
	ctx, cancel, t, srcs, err := af.parse(fs, args)
	if err != nil {
		return err
	}
	defer cancel()
	if err := wantUDP(t); err != nil {
		return err
	}
	if *sessions < 1 || *sessions > 30000 || *keepalive < 10*time.Millisecond {
		return usagef("want -sessions 1 to 30000, -keepalive at least 10ms")
	}
	var f fillSessions
	f.openAll(ctx, t, srcs, *sessions)
	ready(fmt.Sprintf("%d of %d sessions open", len(f.open), *sessions))
	var wg sync.WaitGroup
	for _, s := range f.open {
		wg.Go(func() {
			readCounting(s.c, &s.out, func(h wire.Header) {
				if h.Type == wire.TypeReply {
					s.replies.Add(1)
				}
			})
		})
	}
	kept := 0
	if len(f.open) > 0 {
		kept = keepAlive(ctx, f.open, *keepalive, af.hold)
	} else {
		af.holdOn(ctx)
	}
	time.Sleep(200 * time.Millisecond) // the last replies
	var l ledger
	var replies int64
	for _, s := range f.all {
		s.c.Close()
	}
	wg.Wait()
	for _, s := range f.all {
		l.add(s.src, s.in.Load(), s.out.Load())
		replies += s.replies.Load()
	}
	fmt.Printf("fill: %d sessions asked for from %d addresses: %d opened, refused:%s, other errors: %s; keep-alive probes %d, their replies %d\n",
		*sessions, len(srcs), len(f.open), f.refusals(), f.errs.summary(), kept, replies)
	l.print()
	return nil
}

// fillSessions are the sessions fill asked for: all of them, the ones
// open, and the refusals by code.
type fillSessions struct {
	errs    errorNotes
	mu      sync.Mutex
	open    []*udpSession
	all     []*udpSession
	refused map[wire.ErrorCode]int
}

// openAll opens n sessions, spread over the sources, at most 64 at a time.
func (f *fillSessions) openAll(ctx context.Context, t target, srcs []netip.Addr, n int) {
	f.refused = map[wire.ErrorCode]int{}
	fromEachSource(ctx, srcs, n, func(src netip.Addr) { f.openOne(t, src) })
}

// openOne opens a session from src: a Hello, the Cookie that answers it,
// and a first probe replied to.
func (f *fillSessions) openOne(t target, src netip.Addr) {
	c, err := dialUDP(src, t)
	if err != nil {
		f.errs.note("open a socket", err)
		return
	}
	s := &udpSession{c: c, src: src.String(), nonce: nonce()}
	f.mu.Lock()
	f.all = append(f.all, s)
	f.mu.Unlock()
	msg := make([]byte, wire.HeaderLen)
	h := helloHeader(s.nonce, wire.HeaderLen)
	_ = h.Encode(msg)
	ans, err := s.exchange(msg, func(h wire.Header) bool { return answersHello(h, s.nonce) })
	if err != nil {
		f.errs.note("hello", err)
		return
	}
	if ans.Type == wire.TypeError {
		f.refuse(ans.Code)
		return
	}
	s.token, s.seq = ans.Token, 1
	h = wire.Header{Type: wire.TypeProbe, Token: s.token, Seq: 1, T1: time.Now().UnixNano(), Nonce: s.nonce}
	_ = h.Encode(msg)
	ans, err = s.exchange(msg, func(h wire.Header) bool { return h.Token == s.token && h.Seq == 1 })
	if err != nil {
		f.errs.note("first probe", err)
		return
	}
	if ans.Type != wire.TypeReply {
		f.refuse(ans.Code)
		return
	}
	f.mu.Lock()
	f.open = append(f.open, s)
	f.mu.Unlock()
}

func (f *fillSessions) refuse(code wire.ErrorCode) {
	f.mu.Lock()
	f.refused[code]++
	f.mu.Unlock()
}

// refusals lists the refusals, a " N× CODE" per code (" none" without any).
func (f *fillSessions) refusals() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	s := ""
	for code, n := range f.refused {
		s += fmt.Sprintf(" %d× %q", n, code.String())
	}
	if s == "" {
		s = " none"
	}
	return s
}

// keepAlive sends each open session a probe every keepalive, in turn,
// until hold has passed or ctx ends, and returns how many it sent.
func keepAlive(ctx context.Context, open []*udpSession, keepalive, hold time.Duration) int {
	kept := 0
	gap := keepalive / time.Duration(len(open))
	msg := make([]byte, wire.HeaderLen)
	start := time.Now()
	next := start
	for i := 0; ctx.Err() == nil && time.Since(start) < hold; i++ {
		s := open[i%len(open)]
		s.seq++
		h := wire.Header{Type: wire.TypeProbe, Token: s.token, Seq: s.seq, T1: time.Now().UnixNano(), Nonce: s.nonce}
		_ = h.Encode(msg)
		if _, err := s.c.Write(msg); err == nil {
			s.in.Add(uint64(len(msg)))
			kept++
		}
		next = next.Add(gap)
		if d := time.Until(next); d > 0 {
			time.Sleep(d)
		}
	}
	return kept
}
