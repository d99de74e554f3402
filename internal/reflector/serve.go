package reflector

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/volley-net/volley/internal/kwait"
	"github.com/volley-net/volley/internal/transport"
)

// Serve: the read loop, its batches, and its report clock.

// Serve reflects messages arriving on conn until ctx is done or conn is
// closed, and returns the counters since start. It returns a nil error when
// stopped through ctx. A conn that moves batches (transport.BatchPacketConn)
// is read and answered up to transport.MaxBatch datagrams per system call:
// the datagrams of one batch share their receive time T2 (they were all
// waiting when the call returned), and their replies leave together.
func (r *Reflector) Serve(ctx context.Context, conn transport.PacketConn) (Counters, error) {
	stop := transport.InterruptReads(ctx, conn)
	defer stop()
	if sock, ok := conn.(transport.Stamper); ok && r.cfg.Stamps {
		r.stamps = &stamper{sock: sock}
	}
	defer func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.flushReplies() // the totals returned share the distributions
	}()
	sv := r.newServer(conn)
	// A datagram socket that does not busy-poll: while probes come, the
	// read loop waits in the kernel on its own thread, not in the
	// poller (see kernelWait).
	defer func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		sv.wait.stop()
	}()
	if !r.stream && !sv.busy {
		// Held replies leave from a goroutine of their own, each when
		// due: this loop's read deadline is kept to the millisecond in
		// the poller, to the kernel's tick when it waits in the kernel.
		defer r.startHolder(sv.send)()
	}
	sv.start = r.clk.Now()
	sv.tick = int64(r.cfg.ReportInterval)
	if sv.tick < 0 {
		sv.tick = int64(r.cfg.IdleTimeout)
	}
	sv.next = sv.start + sv.tick
	sv.lastAt = sv.start
	// A loop waiting in the kernel gives way to the scheduler now and
	// then, after its answers (see kwait.Yield). A probe that comes
	// meanwhile waits for it: at most one in 5 ms, where sysmon's retakes
	// it replaces held up reads every 10 ms, and made it poll at 20 µs.
	var yield kwait.Yield
	for {
		if err := sv.setDeadline(); err != nil {
			return r.total(sv.start), err
		}
		if ctx.Err() != nil {
			return r.total(sv.start), nil
		}
		n, err := sv.bc.ReadBatch(sv.in)
		now := sv.in[0].At // T2 as the read returned (SetReadClock)
		if err != nil || n == 0 || now == 0 {
			now = r.clk.Now()
		}
		r.mu.Lock()
		if err != nil {
			switch {
			case errors.Is(err, os.ErrDeadlineExceeded):
			case errors.Is(err, net.ErrClosed):
				r.mu.Unlock()
				return r.total(sv.start), nil
			default:
				// Errors a socket reports for an earlier send (ICMP) do
				// not stop a reflector that serves others.
				r.st.SendErrors++
			}
		}
		sv.answer(sv.in[:n], now)
		sv.after(now)
		sv.wait.after(n, now)
		r.mu.Unlock()
		if sv.wait.on {
			yield.Maybe(now)
		}
	}
}

// server is the state of one Serve: its socket, its buffers and its clock.
type server struct {
	r    *Reflector
	conn transport.PacketConn
	bc   transport.BatchPacketConn
	// busy: the socket busy-polls, and held replies go from the read
	// loop (see newServer).
	busy bool
	send heldSender // sendHeld
	in   []transport.Message
	out  []transport.Message
	reps []sentReply // out's, seq 0 for answers that are not replies
	// The report clock: the interval reports and the idle sweep are
	// due at next, every tick from start; last is the counters at the
	// last report, at lastAt. deadline is the read deadline set.
	start, tick, next int64
	last              Counters
	lastAt, deadline  int64
	wait              kernelWait // where the reads wait
}

// newServer sets up conn for Serve: the handlers of listeners that answer
// on their own goroutines, and the buffers of a batch.
func (r *Reflector) newServer(conn transport.PacketConn) *server {
	bc, batch := transport.Batches(conn)
	if hc, ok := conn.(transport.StreamServer); ok {
		// Each connection answers on its own goroutine, and holds its
		// replies; this loop keeps the clock: intervals, the idle sweep.
		hc.SetHandler(newStreamHandler(r))
		batch = 1
	} else if hc, ok := conn.(transport.CallServer); ok {
		// A bus's callers, each on its own goroutine; held replies go
		// out through the holding goroutine (the bus answers the call
		// then).
		hc.SetHandler(r.answerCall)
		batch = 1
	}
	sv := &server{r: r, conn: conn, bc: bc, wait: kernelWait{conn: conn}}
	if rc, ok := conn.(transport.ReadClocker); ok {
		rc.SetReadClock(r.clk.Now)
	}
	sv.send = sv.sendHeld
	sv.in = make([]transport.Message, batch)
	for i := range sv.in {
		sv.in[i].Buf = make([]byte, r.cfg.MaxMessage+1)
	}
	sv.out = make([]transport.Message, 0, batch)
	sv.reps = make([]sentReply, 0, batch)
	// A busy-polling socket honours read deadlines to the microsecond,
	// and its spinning readers leave no CPU for another goroutine: held
	// replies go from this loop, the read deadline set to the next one.
	bp, _ := conn.(transport.BusyPolled)
	sv.busy = bp != nil && bp.BusyPolling()
	return sv
}

// startHolder starts the goroutine that sends held replies when they are
// due, and returns the function that stops it and waits for it.
func (r *Reflector) startHolder(send heldSender) (stop func()) {
	var holder sync.WaitGroup
	var stopHold atomic.Bool
	holder.Go(func() {
		for !stopHold.Load() {
			r.holdStep(send, stopHold.Load)
		}
	})
	return func() {
		stopHold.Store(true)
		r.alarm.Wake()
		holder.Wait()
	}
}

// setDeadline sets the read deadline to the next report, or, busy
// polling, the next held reply when that is sooner; waiting in the
// kernel, the next look at whether the busy spell is over (kernelWait)
// when that is.
func (sv *server) setDeadline() error {
	want := sv.wait.until(sv.next)
	if sv.busy {
		if due := sv.r.NextDue(); due != 0 && due < want {
			want = due
		}
	}
	if want != sv.deadline {
		sv.deadline = want
		if err := sv.conn.SetReadDeadline(sv.r.clk.Time(sv.deadline)); err != nil {
			return fmt.Errorf("set read deadline: %w", err)
		}
	}
	return nil
}

// answer handles the messages in, read at now, and sends their replies
// in batches.
func (sv *server) answer(in []transport.Message, now int64) {
	r := sv.r
	for i := range in {
		m := &in[i]
		if o := r.handle(m.Buf[:m.N], arrival{addr: m.Addr, t2: now, t2k: m.Stamp.Best(), path: m.Path}); o.reply != nil {
			sv.out = append(sv.out, transport.Message{Buf: o.reply, N: len(o.reply), Addr: m.Addr})
			sv.reps = append(sv.reps, o.rep)
		}
	}
	for pending, preps := sv.out, sv.reps; len(pending) > 0; {
		id := r.nextTxID()
		sent, err := sv.bc.WriteBatch(pending)
		for j, m := range pending[:sent] {
			r.st.PacketsOut++
			r.st.BytesOut += uint64(m.N)
			if preps[j].seq != 0 {
				r.sent(&preps[j], id+uint32(j))
			}
		}
		if err == nil {
			break
		}
		// Skip the one that failed; send the rest.
		if transport.IsSlowReader(err) {
			r.st.Drops[DropSlowReader]++
		} else {
			r.st.SendErrors++
		}
		pending, preps = pending[sent+1:], preps[sent+1:]
	}
	sv.out, sv.reps = sv.out[:0], sv.reps[:0]
}

// after does what follows a batch read at now: held replies due (busy
// polling), the transmit stamps that came, and the report when due.
func (sv *server) after(now int64) {
	r := sv.r
	if sv.busy && len(r.heldQ) > 0 {
		r.due(r.clk.Now(), sv.send)
	}
	if r.stamps != nil {
		r.drainTx()
	}
	if now < sv.next {
		return
	}
	r.reportOneWay()
	r.Sweep(now)
	if r.log != nil {
		// The log streams: each interval's lines are in the file by the
		// next, not only once the buffer fills.
		r.log.Flush()
	}
	if r.cfg.ReportInterval > 0 && r.cfg.OnInterval != nil {
		cur := r.Counters()
		iv := cur.sub(sv.last)
		iv.Elapsed = time.Duration(now - sv.lastAt)
		// OnInterval must not keep them: they are reset next.
		iv.Response, iv.ResponseKernel = r.resp.iv, r.resp.ivK
		sv.last, sv.lastAt = cur, now
		r.cfg.OnInterval(iv)
		r.resp.iv.Reset()
		if r.resp.ivK != nil {
			r.resp.ivK.Reset()
		}
	}
	for sv.next <= now {
		sv.next += sv.tick
	}
}

// sendHeld sends a held reply, now due, and accounts it.
func (sv *server) sendHeld(b []byte, to netip.AddrPort, rep sentReply) {
	r := sv.r
	id := r.nextTxID()
	if _, err := sv.conn.WriteTo(b, to); err != nil {
		switch {
		case transport.IsSlowReader(err):
			r.st.Drops[DropSlowReader]++
		case errors.Is(err, transport.ErrNoMemory):
			r.st.Drops[DropMemory]++
		default:
			r.st.SendErrors++
		}
		return
	}
	r.st.PacketsOut++
	r.st.BytesOut += uint64(len(b))
	r.sent(&rep, id)
}

// total returns the counters since start, with the run's response times.
func (r *Reflector) total(start int64) Counters {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.Counters()
	s.Elapsed = time.Duration(r.clk.Now() - start)
	s.Response, s.ResponseKernel = r.resp.total, r.resp.totalK
	return s
}

// nextTxID is the transmit-stamp ID of the next datagram sent.
func (r *Reflector) nextTxID() uint32 {
	if r.stamps == nil {
		return 0
	}
	return r.stamps.sock.NextTxID()
}
