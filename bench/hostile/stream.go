package main

import (
	"context"
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

	"github.com/volley-net/volley/internal/transport/stream"
	"github.com/volley-net/volley/internal/wire"
)

// streamPeer is one attacking stream connection.
type streamPeer struct {
	raw  net.Conn
	cc   *countConn
	c    *stream.Conn
	addr string // the ledger's key: the source address, or the socket's path
}

// countConn counts the bytes read and written through it.
type countConn struct {
	net.Conn
	r, w atomic.Uint64
}

func (c *countConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	c.r.Add(uint64(n))
	return n, err
}

func (c *countConn) Write(b []byte) (int, error) {
	n, err := c.Conn.Write(b)
	c.w.Add(uint64(n))
	return n, err
}

func dialStream(ctx context.Context, t target, src netip.Addr) (*streamPeer, error) {
	if t.network != "tcp" && t.network != "unix" {
		return nil, usagef("-target %s: this attack wants tcp:// or unix://", t.addr)
	}
	d := net.Dialer{Timeout: 3 * time.Second}
	key := "unix:" + t.addr
	if t.network == "tcp" {
		d.LocalAddr = &net.TCPAddr{IP: src.AsSlice()}
		key = src.String()
	}
	raw, err := d.DialContext(ctx, t.network, t.addr)
	if err != nil {
		return nil, err
	}
	cc := &countConn{Conn: raw}
	return &streamPeer{raw: raw, cc: cc, c: stream.NewConn(cc), addr: key}, nil
}

// handshake opens a session: a Hello, and the Cookie that answers it.
func (p *streamPeer) handshake(replySize, holdMicro uint32) (token, n uint64, err error) {
	n = nonce()
	msg := make([]byte, wire.HeaderLen)
	h := helloHeader(n, replySize)
	h.HoldMicro = holdMicro
	_ = h.Encode(msg)
	if _, err := p.c.Write(msg); err != nil {
		return 0, 0, fmt.Errorf("send hello: %w", err)
	}
	_ = p.c.SetReadDeadline(time.Now().Add(3 * time.Second))
	defer p.c.SetReadDeadline(time.Time{})
	buf := make([]byte, 4096)
	for {
		m, err := p.c.Read(buf)
		if err != nil {
			return 0, 0, fmt.Errorf("wait for the cookie: %w", err)
		}
		var in wire.Header
		if in.Decode(buf[:m]) != nil || !answersHello(in, n) {
			continue
		}
		if in.Type == wire.TypeError {
			return 0, 0, fmt.Errorf("refused: %s", in.Code)
		}
		return in.Token, n, nil
	}
}

// tcpCloseWait is the kernel's TCP_CLOSE_WAIT state: the peer closed.
const tcpCloseWait = 8

// received returns the bytes the reflector sent on the connection: for
// TCP the kernel's count (TCP_INFO), read or not; for a Unix socket what
// was read and what waits unread.
func (p *streamPeer) received() uint64 {
	var n uint64
	_ = rawControl(p.raw, func(fd int) {
		if _, ok := p.raw.(*net.TCPConn); ok {
			if info, err := unix.GetsockoptTCPInfo(fd, unix.IPPROTO_TCP, unix.TCP_INFO); err == nil {
				n = info.Bytes_received
				if n > 0 && info.State == tcpCloseWait {
					n-- // the count includes the peer's FIN
				}
			}
			return
		}
		q, err := unix.IoctlGetInt(fd, unix.SIOCINQ)
		if err == nil {
			n = p.cc.r.Load() + uint64(q)
		}
	})
	return n
}

// closedByPeer reports whether the reflector closed the connection.
func (p *streamPeer) closedByPeer() bool {
	closed := false
	_ = rawControl(p.raw, func(fd int) {
		var b [1]byte
		n, _, err := unix.Recvfrom(fd, b[:], unix.MSG_PEEK|unix.MSG_DONTWAIT)
		closed = (err == nil && n == 0) || errors.Is(err, unix.ECONNRESET) || errors.Is(err, unix.EPIPE)
	})
	return closed
}

// settle counts each peer's bytes in the ledger, and closes it.
func settle(peers []*streamPeer, l *ledger) (closedByPeer int) {
	for _, p := range peers {
		if p.closedByPeer() {
			closedByPeer++
		}
		l.add(p.addr, p.cc.w.Load(), p.received())
		p.raw.Close()
	}
	return closedByPeer
}

// dialAll opens n connections, spread over the sources, at most 64 at a
// time, and runs each through f (nil: none); the ones f returns no error
// for are kept.
func dialAll(ctx context.Context, t target, srcs []netip.Addr, n int, errs *errorNotes, f func(*streamPeer) error) []*streamPeer {
	var (
		mu    sync.Mutex
		peers []*streamPeer
	)
	fromEachSource(ctx, srcs, n, func(src netip.Addr) {
		p, err := dialStream(ctx, t, src)
		if err != nil {
			errs.note("connect", err)
			return
		}
		if f != nil {
			if err := f(p); err != nil {
				errs.note("set up", err)
				p.raw.Close()
				return
			}
		}
		mu.Lock()
		peers = append(peers, p)
		mu.Unlock()
	})
	return peers
}

// held: peers that open a session, ask for replies of -reply bytes held
// -reply-hold each, send -probes probes and never read.
func held(args []string) error {
	fs := flag.NewFlagSet("held", flag.ContinueOnError)
	var af attackFlags
	af.register(fs)
	conns := fs.Int("conns", 1, "non-reading peers, each its own connection and session")
	probes := fs.Int("probes", 300, "probes each peer sends")
	reply := fs.Int("reply", stream.MaxMessage, "reply size each probe asks for, in bytes")
	holdEach := fs.Duration("reply-hold", 10*time.Millisecond, "hold each probe asks for")
	ctx, cancel, t, srcs, err := af.parse(fs, args)
	if err != nil {
		return err
	}
	defer cancel()
	if *conns < 1 || *conns > 10000 || *probes < 1 || *probes > 100000 || *reply < wire.HeaderLen || *reply > stream.MaxMessage {
		return usagef("want -conns 1 to 10000, -probes 1 to 100000, -reply %d to %d", wire.HeaderLen, stream.MaxMessage)
	}
	var errs errorNotes
	var sent atomic.Int64
	hm := uint32(*holdEach / time.Microsecond)
	peers := dialAll(ctx, t, srcs, *conns, &errs, func(p *streamPeer) error {
		token, n, err := p.handshake(uint32(*reply), hm)
		if err != nil {
			return err
		}
		_ = p.raw.SetWriteDeadline(time.Now().Add(5 * time.Second))
		msg := make([]byte, wire.HeaderLen)
		for seq := 1; seq <= *probes && ctx.Err() == nil; seq++ {
			h := wire.Header{Type: wire.TypeProbe, Token: token, Seq: uint64(seq), T1: time.Now().UnixNano(), Nonce: n, ReplySize: uint32(*reply), HoldMicro: hm}
			_ = h.Encode(msg)
			if _, err := p.c.Write(msg); err != nil {
				errs.note("send probe", err)
				break
			}
			sent.Add(1)
		}
		return nil
	})
	ready(fmt.Sprintf("%d peers sent %d probes", len(peers), sent.Load()))
	af.holdOn(ctx)
	var l ledger
	closed := settle(peers, &l)
	fmt.Printf("held: %d of %d peers opened a session and sent %d probes asking for %d-byte replies held %s, reading none; closed by the reflector: %d; errors: %s\n",
		len(peers), *conns, sent.Load(), *reply, *holdEach, closed, errs.summary())
	l.print()
	return nil
}

// partial: connections that send a frame of -size bytes but its last
// byte, after a session's handshake or as their first message.
func partial(args []string) error {
	fs := flag.NewFlagSet("partial", flag.ContinueOnError)
	var af attackFlags
	af.register(fs)
	conns := fs.Int("conns", 200, "connections")
	size := fs.Int("size", stream.MaxMessage, "frame length announced, in bytes")
	handshake := fs.Bool("handshake", true, "open a session first (the frame is a probe); false: the frame is a Hello, the first message")
	ctx, cancel, t, srcs, err := af.parse(fs, args)
	if err != nil {
		return err
	}
	defer cancel()
	if *conns < 1 || *conns > 10000 || *size < wire.HeaderLen+1 || *size > stream.MaxMessage {
		return usagef("want -conns 1 to 10000, -size %d to %d", wire.HeaderLen+1, stream.MaxMessage)
	}
	f := partialFrames{size: *size, zeros: make([]byte, 256<<10)}
	// Writers stop at the end of the hold, or with ctx.
	wctx, stopWriting := context.WithCancel(ctx)
	defer stopWriting()
	peers := dialAll(ctx, t, srcs, *conns, &f.errs, func(p *streamPeer) error {
		var h wire.Header
		if *handshake {
			token, n, err := p.handshake(wire.HeaderLen, 0)
			if err != nil {
				return err
			}
			h = wire.Header{Type: wire.TypeProbe, Token: token, Seq: 1, T1: time.Now().UnixNano(), Nonce: n, ReplySize: wire.HeaderLen}
		} else {
			h = helloHeader(nonce(), wire.HeaderLen)
		}
		f.wg.Go(func() { f.write(wctx, p, h) })
		return nil
	})
	done := make(chan struct{})
	go func() { f.wg.Wait(); close(done) }()
	stalled := f.waitWritten(ctx, done)
	ready(fmt.Sprintf("%d connections, %d frames written but their last byte, %d MiB written, stalled %v", len(peers), f.whole.Load(), f.written.Load()>>20, stalled))
	af.holdOn(ctx)
	stopWriting()
	<-done
	var l ledger
	closed := settle(peers, &l)
	stage := "after a handshake"
	if !*handshake {
		stage = "before any handshake"
	}
	fmt.Printf("partial: %d of %d connections announced %d-byte frames %s; %d written but the last byte, %d MiB in all (the writing stalled: %v); closed by the reflector: %d; errors: %s\n",
		len(peers), *conns, *size, stage, f.whole.Load(), f.written.Load()>>20, stalled, closed, f.errs.summary())
	l.print()
	return nil
}

// partialFrames are partial's frames and what their writers did.
type partialFrames struct {
	size    int    // the frame length announced
	zeros   []byte // the frames' bodies: shared, only read
	written atomic.Uint64
	whole   atomic.Int64 // frames written but their last byte
	errs    errorNotes
	wg      sync.WaitGroup // the writers
}

// write writes p's frame, headed by h, but its last byte; it stops when
// wctx ends.
func (f *partialFrames) write(wctx context.Context, p *streamPeer, h wire.Header) {
	stop := context.AfterFunc(wctx, func() { _ = p.raw.SetWriteDeadline(time.Unix(1, 0)) })
	defer stop()
	head := make([]byte, 4+wire.HeaderLen)
	binary.BigEndian.PutUint32(head, uint32(f.size))
	_ = h.Encode(head[4:])
	n, err := p.cc.Write(head)
	f.written.Add(uint64(n))
	left := f.size - wire.HeaderLen - 1
	for err == nil && left > 0 {
		n, err = p.cc.Write(f.zeros[:min(len(f.zeros), left)])
		f.written.Add(uint64(n))
		left -= n
	}
	if err != nil {
		f.errs.note("write the frame", err)
		return
	}
	f.whole.Add(1)
}

// waitWritten waits until every frame is written but its last byte (done
// is closed), ctx ends, or the writing stalled for 2 s (the reflector
// stopped reading), and reports whether it stalled.
func (f *partialFrames) waitWritten(ctx context.Context, done <-chan struct{}) (stalled bool) {
	last, lastAt := f.written.Load(), time.Now()
	for {
		select {
		case <-done:
			return false
		case <-ctx.Done():
			return false
		case <-time.After(100 * time.Millisecond):
			if w := f.written.Load(); w != last {
				last, lastAt = w, time.Now()
			} else if time.Since(lastAt) > 2*time.Second {
				return true
			}
		}
	}
}

// churn: -waves waves of -conns connections that each send a Hello and
// close, spread over the hold.
func churn(args []string) error {
	fs := flag.NewFlagSet("churn", flag.ContinueOnError)
	var af attackFlags
	af.register(fs)
	waves := fs.Int("waves", 5, "waves of connections")
	conns := fs.Int("conns", 200, "connections per wave")
	ctx, cancel, t, srcs, err := af.parse(fs, args)
	if err != nil {
		return err
	}
	defer cancel()
	if *waves < 1 || *waves > 1000 || *conns < 1 || *conns > 10000 {
		return usagef("want -waves 1 to 1000, -conns 1 to 10000")
	}
	var errs errorNotes
	var l ledger
	opened := 0
	start := time.Now()
	ready(fmt.Sprintf("%d waves of %d connections over %s", *waves, *conns, af.hold))
	for w := range *waves {
		if ctx.Err() != nil {
			break
		}
		peers := dialAll(ctx, t, srcs, *conns, &errs, func(p *streamPeer) error {
			msg := make([]byte, wire.HeaderLen)
			h := helloHeader(nonce(), wire.HeaderLen)
			_ = h.Encode(msg)
			_, err := p.c.Write(msg)
			return err
		})
		opened += len(peers)
		for _, p := range peers {
			l.add(p.addr, p.cc.w.Load(), p.received())
			p.raw.Close()
		}
		next := start.Add(af.hold * time.Duration(w+1) / time.Duration(*waves))
		sleepCtx(ctx, time.Until(next))
	}
	fmt.Printf("churn: %d waves of %d connections, each a 68-byte Hello frame then closed: %d opened, errors: %s\n", *waves, *conns, opened, errs.summary())
	l.print()
	return nil
}

// idle: -conns connections that send nothing.
func idle(args []string) error {
	fs := flag.NewFlagSet("idle", flag.ContinueOnError)
	var af attackFlags
	af.register(fs)
	conns := fs.Int("conns", 2000, "connections")
	ctx, cancel, t, srcs, err := af.parse(fs, args)
	if err != nil {
		return err
	}
	defer cancel()
	if *conns < 1 || *conns > 30000 {
		return usagef("-conns %d: want 1 to 30000", *conns)
	}
	var errs errorNotes
	peers := dialAll(ctx, t, srcs, *conns, &errs, nil)
	ready(fmt.Sprintf("%d connections open", len(peers)))
	af.holdOn(ctx)
	var l ledger
	closed := settle(peers, &l)
	fmt.Printf("idle: %d of %d connections opened from %d addresses, sending nothing; closed by the reflector by the end: %d; errors: %s\n",
		len(peers), *conns, len(srcs), closed, errs.summary())
	l.print()
	return nil
}
