package server

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"runtime"
	"time"

	"github.com/volley-net/volley/internal/clock"
	"github.com/volley-net/volley/internal/quota"
	"github.com/volley-net/volley/internal/reflector"
	"github.com/volley-net/volley/internal/stamp"
	"github.com/volley-net/volley/internal/transport"
	"github.com/volley-net/volley/internal/tstamp"
)

// The STAMP listener (--stamp): a Session-Reflector (package stamp) on a
// UDP socket of its own, kept within the volley reflector's limits.
//
// A STAMP session is a sender's address and port. Each packet passes, in
// this order: the allow-list (refused), the session table's bounds in all
// and per source (sessions), the session's rate and the total rate (rate),
// then package stamp's checks (short, auth; a stateful table with no room:
// sessions). Only then does a stateful reflector count it, so the
// reflector's sequence numbers count the packets it answered. The reply
// is built in the request's buffer and is never longer than the request.

// STAMPConfig is how the STAMP listener answers. Its limits are the
// volley reflector's (Config.Reflector): Allow, MaxRate, MaxTotalRate,
// MaxSessions, MaxSessionsPerSource, IdleTimeout, ReportInterval, Clock.
type STAMPConfig struct {
	// Key is the HMAC key of authenticated mode (RFC 8762 §4.4); nil:
	// unauthenticated mode.
	Key []byte
	// Stateless copies each sender's sequence number into its reply;
	// stateful (the default) numbers each session's replies 0, 1, 2, ...
	Stateless bool
	// Err is the error estimate of the reflector's clock in every reply
	// (RFC 4656 §4.1.2); 0: the host clock's, as the kernel tells it at
	// the start (clockError).
	Err stamp.ErrorEstimate
}

// stampWriteTimeout is the longest a batch of STAMP replies may wait for
// room in the socket's send buffer.
const stampWriteTimeout = int64(time.Second)

// stampSession is what the listener keeps of a sender.
type stampSession struct {
	src      netip.Prefix
	lastSeen int64
	bucket   reflector.Bucket
}

// stampKey names a STAMP session as the stateful numbering does: the
// sender's address and port, and its SSID. The limits count sessions by
// the same key, so that one source cannot fill the numbering's table by
// changing its SSID while its quota sees one session.
type stampKey struct {
	addr netip.AddrPort
	ssid uint16
}

// A read error in a row past stampErrorsBeforeBackoff makes the loop
// wait stampBackoff before the next read.
const (
	stampErrorsBeforeBackoff = 16
	stampBackoff             = time.Millisecond
)

// stampServer is the STAMP listener's loop and its state; one goroutine
// runs it.
type stampServer struct {
	conn    transport.PacketConn
	bc      transport.BatchPacketConn
	wd      transport.WriteDeadliner // nil: the socket's writes take none
	refl    *stamp.Reflector
	clk     clock.Clock
	lim     reflector.Config // the limits, defaults filled in
	stamped bool             // kernel receive stamps are on
	// tx is the socket when its kernel stamps are on: they stamp what it
	// sends too, and those transmit stamps, which STAMP has no use for,
	// are read and dropped after every send, or they fill the socket's
	// receive buffer and it hears nothing more.
	tx       transport.Stamper
	txBuf    []tstamp.TxStamp
	key      []byte // the HMAC key of authenticated mode; nil: unauthenticated
	sessions map[stampKey]*stampSession
	readErrs int // read errors in a row, for a backoff
	bySource *quota.Counter
	all      reflector.Bucket // MaxTotalRate
	iv       reflector.Counters
	total    reflector.Counters
	in, out  []transport.Message
	wdl      int64 // the write deadline set
	// onInterval, when set, is given each interval's counters.
	onInterval func(reflector.Counters)
}

// newStampServer returns the loop for conn, answering as sc says within
// lim's limits (zero ones get the reflector's defaults).
func newStampServer(conn transport.PacketConn, sc STAMPConfig, lim reflector.Config, stamped bool) *stampServer {
	lim = lim.WithLimits()
	if sc.Err == 0 {
		sc.Err = clockError()
	}
	bc, batch := transport.Batches(conn)
	sv := &stampServer{conn: conn, bc: bc, clk: lim.Clock, lim: lim, stamped: stamped,
		refl: stamp.NewReflector(stamp.ReflectorConfig{Key: sc.Key, Stateful: !sc.Stateless, Err: sc.Err,
			MaxSessions: lim.MaxSessions, Idle: int64(lim.IdleTimeout)}),
		key:      sc.Key,
		sessions: make(map[stampKey]*stampSession),
		bySource: quota.NewCounter(lim.MaxSessions, lim.MaxSessionsPerSource),
		in:       make([]transport.Message, batch),
		out:      make([]transport.Message, 0, batch),
	}
	sv.wd, _ = conn.(transport.WriteDeadliner)
	if st, ok := conn.(transport.Stamper); ok && stamped {
		sv.tx, sv.txBuf = st, make([]tstamp.TxStamp, stampTxDrain)
	}
	for i := range sv.in {
		sv.in[i].Buf = make([]byte, reflector.MaxMessage+1)
	}
	return sv
}

// serve answers on sv.conn until ctx is done or the socket is closed, and
// returns the counters since start.
func (sv *stampServer) serve(ctx context.Context) (reflector.Counters, error) {
	stop := transport.InterruptReads(ctx, sv.conn)
	defer stop()
	start := sv.clk.Now()
	tick := int64(sv.lim.ReportInterval)
	if tick < 0 {
		tick = int64(sv.lim.IdleTimeout)
	}
	next, lastAt, deadline := start+tick, start, int64(0)
	for {
		if next != deadline {
			deadline = next
			if err := sv.conn.SetReadDeadline(sv.clk.Time(deadline)); err != nil {
				return sv.totals(start), fmt.Errorf("stamp: set read deadline: %w", err)
			}
		}
		if ctx.Err() != nil {
			return sv.totals(start), nil
		}
		n, err := sv.bc.ReadBatch(sv.in)
		now := sv.clk.Now()
		switch {
		case err == nil, errors.Is(err, os.ErrDeadlineExceeded):
			sv.readErrs = 0
		case errors.Is(err, net.ErrClosed):
			return sv.totals(start), nil
		default:
			// An earlier send's error (ICMP) stops no reflector; one
			// that comes back at every read must not spin it either.
			sv.iv.SendErrors++
			if sv.readErrs++; sv.readErrs > stampErrorsBeforeBackoff {
				time.Sleep(stampBackoff)
			}
		}
		sv.answer(sv.in[:n], now)
		if now >= next {
			sv.sweep(now)
			sv.report(now - lastAt)
			lastAt = now
			for next <= now {
				next += tick
			}
		}
	}
}

// answer handles the batch in, read at now, and sends the replies.
func (sv *stampServer) answer(in []transport.Message, now int64) {
	for i := range in {
		m := &in[i]
		if sv.handle(m, now) {
			sv.out = append(sv.out, transport.Message{Buf: m.Buf, N: m.N, Addr: m.Addr})
		}
	}
	if len(sv.out) > 0 {
		sv.send(sv.out, now)
	}
	sv.out = sv.out[:0]
	sv.drainTx()
}

// stampTxDrain is how many transmit stamps drainTx reads per call.
const stampTxDrain = 64

// drainTx reads and drops the transmit stamps waiting on the socket (see
// stampServer.tx); it never waits.
func (sv *stampServer) drainTx() {
	if sv.tx == nil {
		return
	}
	for {
		n, err := sv.tx.ReadTxStamps(sv.txBuf)
		if err != nil || n < len(sv.txBuf) {
			return
		}
	}
}

// handle turns the request m, read at now, into its reply in place (m.N
// its length) and reports whether it is to be sent; a request dropped is
// counted by its reason.
func (sv *stampServer) handle(m *transport.Message, now int64) bool {
	sv.iv.PacketsIn++
	sv.iv.BytesIn += uint64(m.N)
	if m.N > reflector.MaxMessage || m.N > len(m.Buf) {
		return sv.drop(reflector.DropOversize)
	}
	if !reflector.Allowed(sv.lim.Allow, m.Addr) {
		return sv.drop(reflector.DropRefused)
	}
	ssid, ok := stamp.SenderSSID(m.Buf[:m.N], sv.key)
	if !ok {
		return sv.drop(reflector.DropShort)
	}
	k := stampKey{m.Addr, ssid}
	s := sv.sessions[k]
	src := quota.Source(m.Addr)
	if s == nil && (len(sv.sessions) >= sv.lim.MaxSessions || sv.bySource.Of(src) >= sv.lim.MaxSessionsPerSource) {
		return sv.drop(reflector.DropSessions)
	}
	if s != nil && !s.bucket.Take(sv.lim.MaxRate, now) {
		return sv.drop(reflector.DropRate)
	}
	if sv.lim.MaxTotalRate > 0 && !sv.all.Take(sv.lim.MaxTotalRate, now) {
		return sv.drop(reflector.DropRate)
	}
	t2 := now
	if sv.stamped && m.Stamp.SW != 0 {
		// The kernel's receive stamp, on the system clock as T3 is;
		// a NIC's (Stamp.HW) may run on a clock of its own.
		t2 = m.Stamp.SW
	}
	var ttl uint8
	if m.Path.OK {
		ttl = m.Path.TTL
	}
	// T3 is read last, just before the reply leaves, and never before
	// T2 (a kernel stamp and the user-space clock may differ by a step).
	t3 := max(sv.clk.Now(), t2)
	n, err := sv.refl.Reflect(m.Buf, m.N, m.Addr, t2, t3, ttl)
	switch {
	case errors.Is(err, stamp.ErrAuth):
		return sv.drop(reflector.DropAuth)
	case errors.Is(err, stamp.ErrFull):
		return sv.drop(reflector.DropSessions)
	case err != nil:
		return sv.drop(reflector.DropShort) // ErrShort, or malformed
	case n <= 0 || n > m.N:
		return sv.drop(reflector.DropOversize) // never amplify
	}
	if s == nil {
		if sv.bySource.Take(src) != quota.OK {
			return sv.drop(reflector.DropSessions)
		}
		s = &stampSession{src: src}
		s.bucket.Take(sv.lim.MaxRate, now) // this packet's token
		sv.sessions[k] = s
		sv.iv.SessionsOpened++
	}
	s.lastSeen = now
	m.N = n
	return true
}

// drop counts a request dropped for reason r, and returns false.
func (sv *stampServer) drop(r reflector.DropReason) bool {
	sv.iv.Drops[r]++
	return false
}

// send writes the replies out, at now, within stampWriteTimeout; one that
// fails is counted and skipped, and a timeout ends the batch.
func (sv *stampServer) send(out []transport.Message, now int64) {
	if sv.wd != nil && sv.wdl < now+stampWriteTimeout/2 {
		// Moved only now and then: a deadline a second ahead, renewed
		// when half of it is gone.
		sv.wdl = now + stampWriteTimeout
		if err := sv.wd.SetWriteDeadline(sv.clk.Time(sv.wdl)); err != nil {
			sv.iv.SendErrors += uint64(len(out))
			return
		}
	}
	for len(out) > 0 {
		sent, err := sv.bc.WriteBatch(out)
		for _, m := range out[:sent] {
			sv.iv.PacketsOut++
			sv.iv.BytesOut += uint64(m.N)
		}
		if err == nil {
			return
		}
		if errors.Is(err, os.ErrDeadlineExceeded) || errors.Is(err, net.ErrClosed) {
			sv.iv.SendErrors += uint64(len(out) - sent)
			return
		}
		sv.iv.SendErrors++
		out = out[min(sent+1, len(out)):]
	}
}

// sweep forgets the sessions idle for longer than the idle timeout at now.
func (sv *stampServer) sweep(now int64) {
	for addr, s := range sv.sessions {
		if now-s.lastSeen > int64(sv.lim.IdleTimeout) {
			sv.bySource.Give(s.src)
			delete(sv.sessions, addr)
		}
	}
}

// report ends an interval of length elapsed: its counters go into the
// totals and, when interval reports are on, to onInterval.
func (sv *stampServer) report(elapsed int64) {
	iv := sv.iv
	iv.Elapsed = time.Duration(elapsed)
	iv.Sessions = len(sv.sessions)
	sv.total = sv.total.Add(iv)
	sv.iv = reflector.Counters{}
	if sv.lim.ReportInterval > 0 && sv.onInterval != nil {
		sv.onInterval(iv)
	}
}

// totals returns the counters since start.
func (sv *stampServer) totals(start int64) reflector.Counters {
	t := sv.total.Add(sv.iv)
	t.Elapsed = time.Duration(sv.clk.Now() - start)
	t.Sessions = len(sv.sessions)
	return t
}

// openSTAMP opens the STAMP listener's socket on addr (--stamp) with the
// UDP sockets' options, and asks it for each datagram's TTL or hop limit
// (echoed to senders; 0 where the system does not say).
func openSTAMP(ctx context.Context, addr string, s Setup) (transport.PacketConn, error) {
	if err := checkStampPort(s.Listen, addr); err != nil {
		return nil, err
	}
	pcs, err := transport.ListenUDPWith(ctx, addr, 1, s.UDP)
	if err != nil {
		return nil, fmt.Errorf("--stamp %s: %w", addr, err)
	}
	if pr, ok := pcs[0].(transport.PathReader); ok {
		_ = pr.EnablePath() // refused: the TTL echoed is 0
	}
	return pcs[0], nil
}

// checkStampPort refuses a --stamp port that is --listen's too (UDP
// both): the two would share the port's datagrams.
func checkStampPort(listen, stampAddr string) error {
	lh, lp, err1 := net.SplitHostPort(listen)
	sh, sp, err2 := net.SplitHostPort(stampAddr)
	if err1 != nil || err2 != nil || lp != sp || sp == "0" || sp == "" {
		return nil // bind says what is wrong with a bad one
	}
	wild := func(h string) bool {
		a, err := netip.ParseAddr(h)
		return h == "" || (err == nil && a.IsUnspecified())
	}
	if lh == sh || wild(lh) || wild(sh) {
		return configErrorf("--stamp %s: port %s is volley's UDP listener's too (--listen %s); give STAMP a port of its own", stampAddr, sp, listen)
	}
	return nil
}

// stampServer makes the STAMP listener's loop, worker i of agg, from cfg.
func (ss *Listeners) stampServer(i int, cfg Config, agg *statsSum) *stampServer {
	sv := newStampServer(ss.STAMP, cfg.STAMP, cfg.Reflector, ss.stamped)
	if agg.emit != nil {
		sv.onInterval = func(s reflector.Counters) { agg.add(i, s) }
	}
	return sv
}

// run is the STAMP listener's worker, number i: it answers until ctx is
// done or the socket fails.
func (sv *stampServer) run(ctx context.Context, i int, thread func(int, string) error) (reflector.Counters, error) {
	if thread != nil {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if err := thread(i, fmt.Sprintf("worker %d (stamp://%s)", i+1, sv.conn.LocalAddr())); err != nil {
			return reflector.Counters{}, err
		}
	}
	return sv.serve(ctx)
}
