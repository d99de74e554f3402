package main

import (
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

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
	type port struct {
		c       *net.UDPConn
		src     string
		in, out atomic.Uint64
	}
	var errs errorNotes
	var socks []*port
	for i := range *ports {
		c, err := dialUDP(srcs[i%len(srcs)], t)
		if err != nil {
			errs.note("open a socket", err)
			continue
		}
		socks = append(socks, &port{c: c, src: srcs[i%len(srcs)].String()})
	}
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
	msg := make([]byte, wire.HeaderLen)
	start := time.Now()
	sent := 0
	for ctx.Err() == nil {
		el := time.Since(start)
		if el >= af.hold {
			break
		}
		due := min(int(*rate*el.Seconds())-sent, max(1, int(*rate/100)))
		for range due {
			p := socks[sent%len(socks)]
			h := wire.Header{Type: wire.TypeHello, Seq: nonce(), T1: time.Now().UnixNano(), ReplySize: wire.HeaderLen}
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
	buf := make([]byte, 70000)
	for try := 0; try < 3; try++ {
		if _, err := s.c.Write(msg); err != nil {
			return wire.Header{}, err
		}
		s.in.Add(uint64(len(msg)))
		_ = s.c.SetReadDeadline(time.Now().Add(time.Second))
		for {
			n, err := s.c.Read(buf)
			if err != nil {
				if errors.Is(err, net.ErrClosed) {
					return wire.Header{}, err
				}
				break
			}
			s.out.Add(uint64(n))
			var h wire.Header
			if h.Decode(buf[:n]) == nil && want(h) {
				_ = s.c.SetReadDeadline(time.Time{})
				return h, nil
			}
		}
	}
	return wire.Header{}, errors.New("no answer to 3 tries")
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
	var (
		errs    errorNotes
		mu      sync.Mutex
		open    []*udpSession
		all     []*udpSession
		refused = map[wire.ErrorCode]int{}
		wg      sync.WaitGroup
	)
	sem := make(chan struct{}, 64)
	for i := range *sessions {
		if ctx.Err() != nil {
			break
		}
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			src := srcs[i%len(srcs)]
			c, err := dialUDP(src, t)
			if err != nil {
				errs.note("open a socket", err)
				return
			}
			s := &udpSession{c: c, src: src.String(), nonce: nonce()}
			mu.Lock()
			all = append(all, s)
			mu.Unlock()
			msg := make([]byte, wire.HeaderLen)
			h := wire.Header{Type: wire.TypeHello, Seq: s.nonce, T1: time.Now().UnixNano(), ReplySize: wire.HeaderLen}
			_ = h.Encode(msg)
			ans, err := s.exchange(msg, func(h wire.Header) bool {
				return h.Seq == s.nonce && (h.Type == wire.TypeCookie || h.Type == wire.TypeError)
			})
			if err != nil {
				errs.note("hello", err)
				return
			}
			if ans.Type == wire.TypeError {
				mu.Lock()
				refused[ans.Code]++
				mu.Unlock()
				return
			}
			s.token, s.seq = ans.Token, 1
			h = wire.Header{Type: wire.TypeProbe, Token: s.token, Seq: 1, T1: time.Now().UnixNano(), Nonce: s.nonce}
			_ = h.Encode(msg)
			ans, err = s.exchange(msg, func(h wire.Header) bool { return h.Token == s.token && h.Seq == 1 })
			if err != nil {
				errs.note("first probe", err)
				return
			}
			if ans.Type != wire.TypeReply {
				mu.Lock()
				refused[ans.Code]++
				mu.Unlock()
				return
			}
			mu.Lock()
			open = append(open, s)
			mu.Unlock()
		})
	}
	wg.Wait()
	refusals := ""
	for code, n := range refused {
		refusals += fmt.Sprintf(" %d× %q", n, code.String())
	}
	ready(fmt.Sprintf("%d of %d sessions open", len(open), *sessions))
	for _, s := range open {
		wg.Go(func() {
			readCounting(s.c, &s.out, func(h wire.Header) {
				if h.Type == wire.TypeReply {
					s.replies.Add(1)
				}
			})
		})
	}
	kept := 0
	if len(open) > 0 {
		gap := *keepalive / time.Duration(len(open))
		msg := make([]byte, wire.HeaderLen)
		start := time.Now()
		next := start
		for i := 0; ctx.Err() == nil && time.Since(start) < af.hold; i++ {
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
	} else {
		af.holdOn(ctx)
	}
	time.Sleep(200 * time.Millisecond) // the last replies
	var l ledger
	var replies int64
	for _, s := range all {
		s.c.Close()
	}
	wg.Wait()
	for _, s := range all {
		l.add(s.src, s.in.Load(), s.out.Load())
		replies += s.replies.Load()
	}
	if refusals == "" {
		refusals = " none"
	}
	fmt.Printf("fill: %d sessions asked for from %d addresses: %d opened, refused:%s, other errors: %s; keep-alive probes %d, their replies %d\n",
		*sessions, len(srcs), len(open), refusals, errs.summary(), kept, replies)
	l.print()
	return nil
}

// replay phases: what the victim's socket counts its bytes under.
var replayPhases = []string{"legit", "live-probe", "after-close-probe", "after-close-close", "after-sweep-probe", "after-sweep-close"}

// replay: a legitimate session from the victim's address that asks for
// -reply-byte replies, recorded, then its probe and Close replayed from
// the victim's address (forged with a raw socket where root allows):
// inside the live session, after its Close and after the reflector's idle
// sweep. The victim's socket counts what reaches it.
func replay(args []string) error {
	fs := flag.NewFlagSet("replay", flag.ContinueOnError)
	var af attackFlags
	af.register(fs)
	victimFlag := fs.String("victim", "127.0.0.9", "the victim's address, a loopback address the legitimate session runs from")
	key := fs.String("key", "", "the reflector's shared key (the legitimate session is signed with it)")
	reply := fs.Int("reply", 65000, "reply size the recorded probe asks for")
	count := fs.Int("count", 100, "replays of each message in each phase")
	idleTimeout := fs.Duration("idle", 2*time.Second, "the reflector's --idle-timeout: the replays after the sweep wait this long and 1.5 s more")
	spoof := fs.String("spoof", "auto", "raw: forge the victim's source address with a raw socket (IP_HDRINCL); none: send from the victim's socket; auto: raw if it can")
	ctx, cancel, t, _, err := af.parse(fs, args)
	if err != nil {
		return err
	}
	defer cancel()
	if err := wantUDP(t); err != nil {
		return err
	}
	victim, err := netip.ParseAddr(*victimFlag)
	if err != nil || !victim.Is4() || !victim.IsLoopback() {
		return usagef("-victim %q: want an address on 127.0.0.0/8", *victimFlag)
	}
	if *count < 1 || *count > 100000 || *reply < wire.HeaderLen || *reply > 65000 || *idleTimeout < 0 {
		return usagef("want -count 1 to 100000, -reply %d to 65000, -idle of 0 or more", wire.HeaderLen)
	}
	if *spoof != "auto" && *spoof != "raw" && *spoof != "none" {
		return usagef("-spoof %q: want auto, raw or none", *spoof)
	}
	vc, err := net.ListenUDP("udp4", &net.UDPAddr{IP: victim.AsSlice()})
	if err != nil {
		return err
	}
	defer vc.Close()
	_ = rawControl(vc, func(fd int) { _ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, 64<<20) })
	vap := vc.LocalAddr().(*net.UDPAddr).AddrPort()
	dst := net.UDPAddrFromAddrPort(t.ap)

	var signer *wire.Signer
	tag := 0
	if *key != "" {
		signer, tag = wire.NewSigner([]byte(*key)), wire.TagLen
	}
	encode := func(h wire.Header) []byte {
		msg := make([]byte, wire.HeaderLen+tag)
		if signer != nil {
			h.Flags |= wire.FlagAuth
		}
		_ = h.Encode(msg)
		if signer != nil {
			signer.Sign(msg)
		}
		return msg
	}
	nc := nonce() // the Hello's
	var token uint64
	// The legitimate session, from the victim's own socket.
	exchange := func(msg []byte, want func(wire.Header) bool) (wire.Header, int, error) {
		buf := make([]byte, 70000)
		for try := 0; try < 3; try++ {
			if _, err := vc.WriteToUDP(msg, dst); err != nil {
				return wire.Header{}, 0, err
			}
			_ = vc.SetReadDeadline(time.Now().Add(time.Second))
			for {
				n, err := vc.Read(buf)
				if err != nil {
					break
				}
				var h wire.Header
				if h.Decode(buf[:n]) == nil && want(h) {
					_ = vc.SetReadDeadline(time.Time{})
					return h, n, nil
				}
			}
		}
		return wire.Header{}, 0, errors.New("no answer to 3 tries")
	}
	ans, _, err := exchange(encode(wire.Header{Type: wire.TypeHello, Seq: nc, T1: time.Now().UnixNano(), ReplySize: uint32(*reply)}),
		func(h wire.Header) bool {
			return h.Seq == nc && (h.Type == wire.TypeCookie || h.Type == wire.TypeError)
		})
	if err != nil {
		return fmt.Errorf("the legitimate session's hello: %w", err)
	}
	if ans.Type == wire.TypeError {
		return fmt.Errorf("the legitimate session was refused: %s", ans.Code)
	}
	token = ans.Token
	probe := encode(wire.Header{Type: wire.TypeProbe, Token: token, Seq: 1, T1: time.Now().UnixNano(), Nonce: nc, ReplySize: uint32(*reply)})
	_, got, err := exchange(probe, func(h wire.Header) bool { return h.Type == wire.TypeReply && h.Token == token && h.Seq == 1 })
	if err != nil {
		return fmt.Errorf("the legitimate session's probe: %w", err)
	}
	closeMsg := encode(wire.Header{Type: wire.TypeClose, Token: token, Seq: 2, T1: time.Now().UnixNano(), Nonce: nc})

	// From here the victim's socket only counts.
	var phase atomic.Int32
	var pkts, bytes [6]atomic.Uint64
	var closeAcked atomic.Bool
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, 70000)
		for {
			n, err := vc.Read(buf)
			if err != nil {
				if errors.Is(err, net.ErrClosed) {
					return
				}
				continue
			}
			ph := phase.Load()
			pkts[ph].Add(1)
			bytes[ph].Add(uint64(n))
			var h wire.Header
			if ph == 0 && h.Decode(buf[:n]) == nil && h.Type == wire.TypeCloseAck && h.Token == token {
				closeAcked.Store(true)
			}
		}
	}()
	defer func() { vc.Close(); <-done }()

	how := "raw: the victim's source address forged with IP_HDRINCL"
	send := func(b []byte) error { _, err := vc.WriteToUDP(b, dst); return err }
	if *spoof != "none" {
		rs, err := newRawSender(vap, t.ap)
		switch {
		case err == nil:
			defer rs.close()
			send = rs.send
		case *spoof == "raw":
			return err
		default:
			how = fmt.Sprintf("none: sent from the victim's own socket (a raw socket: %v)", err)
		}
	} else {
		how = "none: sent from the victim's own socket"
	}
	ready(fmt.Sprintf("recorded a %d-byte probe that got a %d-byte reply; replaying from %s, spoof %s", len(probe), got, vap, how))
	var sentPkts, sentBytes [6]uint64
	var errs errorNotes
	sleep := func(d time.Duration) {
		select {
		case <-ctx.Done():
		case <-time.After(d):
		}
	}
	runPhase := func(ph int, msg []byte) {
		phase.Store(int32(ph))
		for range *count {
			if ctx.Err() != nil {
				break
			}
			if err := send(msg); err != nil {
				errs.note("replay", err)
				continue
			}
			sentPkts[ph]++
			sentBytes[ph] += uint64(len(msg))
			time.Sleep(time.Millisecond)
		}
		sleep(400 * time.Millisecond) // the answers
		phase.Store(0)
	}
	runPhase(1, probe)
	// The legitimate Close, from the victim's socket.
	for try := 0; try < 3 && !closeAcked.Load() && ctx.Err() == nil; try++ {
		if _, err := vc.WriteToUDP(closeMsg, dst); err != nil {
			return fmt.Errorf("the legitimate close: %w", err)
		}
		sleep(300 * time.Millisecond)
	}
	runPhase(2, probe)
	runPhase(3, closeMsg)
	sleep(*idleTimeout + 1500*time.Millisecond) // the idle sweep runs every second
	runPhase(4, probe)
	runPhase(5, closeMsg)

	fmt.Printf("replay: spoof %s; the legitimate session's close acknowledged: %v; errors: %s\n", how, closeAcked.Load(), errs.summary())
	var l ledger
	for ph := 1; ph < len(replayPhases); ph++ {
		r := ratio(sentBytes[ph], bytes[ph].Load())
		note := ""
		if ph == 1 {
			note = " (not in the verdict: copies inside the live session)"
		} else {
			// Per phase: each is a way to attack, not a share of one.
			l.add(victim.String()+" "+replayPhases[ph], sentBytes[ph], bytes[ph].Load())
		}
		fmt.Printf("replay %s: sent %d × %d B = %d B; the victim got %d packets, %d B: ×%s%s\n", replayPhases[ph],
			sentPkts[ph], len(probe), sentBytes[ph], pkts[ph].Load(), bytes[ph].Load(), ratioText(r), note)
	}
	l.print()
	return nil
}

// rawSender sends UDP datagrams with a forged source address.
type rawSender struct {
	fd       int
	src, dst netip.AddrPort
}

func newRawSender(src, dst netip.AddrPort) (*rawSender, error) {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_RAW, unix.IPPROTO_RAW)
	if err != nil {
		return nil, fmt.Errorf("open a raw socket: %w", err)
	}
	if err := unix.SetsockoptInt(fd, unix.IPPROTO_IP, unix.IP_HDRINCL, 1); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("set IP_HDRINCL: %w", err)
	}
	return &rawSender{fd: fd, src: src, dst: dst}, nil
}

func (r *rawSender) send(payload []byte) error {
	return unix.Sendto(r.fd, udpPacket(r.src, r.dst, payload), 0, &unix.SockaddrInet4{Addr: r.dst.Addr().As4()})
}

func (r *rawSender) close() { unix.Close(r.fd) }

// udpPacket builds an IPv4 datagram carrying payload in UDP from src to dst.
func udpPacket(src, dst netip.AddrPort, payload []byte) []byte {
	n := 20 + 8 + len(payload)
	b := make([]byte, n)
	s4, d4 := src.Addr().As4(), dst.Addr().As4()
	b[0] = 0x45 // version 4, 5 words of header
	binary.BigEndian.PutUint16(b[2:], uint16(n))
	binary.BigEndian.PutUint16(b[4:], uint16(nonce()))
	b[8] = 64 // TTL
	b[9] = unix.IPPROTO_UDP
	copy(b[12:16], s4[:])
	copy(b[16:20], d4[:])
	binary.BigEndian.PutUint16(b[10:], checksum(b[:20]))
	u := b[20:]
	binary.BigEndian.PutUint16(u[0:], src.Port())
	binary.BigEndian.PutUint16(u[2:], dst.Port())
	binary.BigEndian.PutUint16(u[4:], uint16(len(u)))
	copy(u[8:], payload)
	pseudo := make([]byte, 12, 12+len(u))
	copy(pseudo[0:4], s4[:])
	copy(pseudo[4:8], d4[:])
	pseudo[9] = unix.IPPROTO_UDP
	binary.BigEndian.PutUint16(pseudo[10:], uint16(len(u)))
	sum := checksum(append(pseudo, u...))
	if sum == 0 {
		sum = 0xffff
	}
	binary.BigEndian.PutUint16(u[6:], sum)
	return b
}

// checksum is the Internet checksum of b.
func checksum(b []byte) uint16 {
	var s uint32
	for i := 0; i+1 < len(b); i += 2 {
		s += uint32(binary.BigEndian.Uint16(b[i:]))
	}
	if len(b)%2 == 1 {
		s += uint32(b[len(b)-1]) << 8
	}
	for s > 0xffff {
		s = s>>16 + s&0xffff
	}
	return ^uint16(s)
}
