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

	"github.com/volley-net/volley/internal/transport"
)

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
		hc.SetHandler(func(msg []byte, from netip.AddrPort) []byte {
			now := r.clk.Now()
			r.mu.Lock()
			defer r.mu.Unlock()
			r.lastOK = false
			reply := r.Handle(msg, from, now)
			if reply != nil {
				r.st.PacketsOut++ // its caller sends it
				r.st.BytesOut += uint64(len(reply))
				r.sent(0)
			}
			return reply
		})
		batch = 1
	}
	in := make([]transport.Message, batch)
	for i := range in {
		in[i].Buf = make([]byte, r.cfg.MaxMessage+1)
	}
	out := make([]transport.Message, 0, batch)
	reps := make([]sentReply, 0, batch) // out's, seq 0 for answers that are not replies
	send := func(b []byte, to netip.AddrPort) {
		id := r.nextTxID()
		if _, err := conn.WriteTo(b, to); err != nil {
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
		r.sent(id)
	}
	// A busy-polling socket honours read deadlines to the microsecond,
	// and its spinning readers leave no CPU for another goroutine: held
	// replies go from this loop, the read deadline set to the next one.
	bp, _ := conn.(transport.BusyPolled)
	busy := bp != nil && bp.BusyPolling()
	if !r.stream && !busy {
		// Held replies leave from a goroutine of their own, each when
		// due: this loop waits in the poller, which rounds its
		// deadlines up to the millisecond.
		var holder sync.WaitGroup
		var stopHold atomic.Bool
		holder.Go(func() {
			for !stopHold.Load() {
				r.holdStep(send, stopHold.Load)
			}
		})
		defer func() {
			stopHold.Store(true)
			r.alarm.Wake()
			holder.Wait()
		}()
	}
	start := r.clk.Now()
	tick := int64(r.cfg.ReportInterval)
	if tick < 0 {
		tick = int64(r.cfg.IdleTimeout)
	}
	next := start + tick
	var last Counters
	lastAt := start
	var deadline int64
	for {
		want := next
		if busy {
			if due := r.NextDue(); due != 0 && due < want {
				want = due
			}
		}
		if want != deadline {
			deadline = want
			if err := conn.SetReadDeadline(r.clk.Time(deadline)); err != nil {
				return r.total(start), fmt.Errorf("set read deadline: %w", err)
			}
		}
		if ctx.Err() != nil {
			return r.total(start), nil
		}
		n, err := bc.ReadBatch(in)
		now := r.clk.Now()
		r.mu.Lock()
		if err != nil {
			switch {
			case errors.Is(err, os.ErrDeadlineExceeded):
			case errors.Is(err, net.ErrClosed):
				r.mu.Unlock()
				return r.total(start), nil
			default:
				// Errors a socket reports for an earlier send (ICMP) do
				// not stop a reflector that serves others.
				r.st.SendErrors++
			}
		}
		for i := range n {
			m := &in[i]
			r.rxStamp, r.lastOK = m.Stamp.Best(), false
			if reply := r.Handle(m.Buf[:m.N], m.Addr, now); reply != nil {
				out = append(out, transport.Message{Buf: reply, N: len(reply), Addr: m.Addr})
				if !r.lastOK {
					r.last = sentReply{}
				}
				reps = append(reps, r.last)
			}
		}
		r.lastOK = false
		for pending, preps := out, reps; len(pending) > 0; {
			id := r.nextTxID()
			sent, err := bc.WriteBatch(pending)
			for j, m := range pending[:sent] {
				r.st.PacketsOut++
				r.st.BytesOut += uint64(m.N)
				r.last, r.lastOK = preps[j], preps[j].seq != 0
				r.sent(id + uint32(j))
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
		out, reps = out[:0], reps[:0]
		if busy && len(r.heldQ) > 0 {
			r.Due(r.clk.Now(), send)
		}
		if r.stamps != nil {
			r.drainTx()
		}
		if now >= next {
			r.reportOneWay()
			r.Sweep(now)
			if r.log != nil {
				// The log streams: each interval's lines are in the file
				// by the next, not only once the buffer fills.
				r.log.Flush()
			}
			if r.cfg.ReportInterval > 0 && r.cfg.OnInterval != nil {
				cur := r.Counters()
				iv := cur.sub(last)
				iv.Elapsed = time.Duration(now - lastAt)
				// OnInterval must not keep them: they are reset next.
				iv.Response, iv.ResponseKernel = r.resp.iv, r.resp.ivK
				last, lastAt = cur, now
				r.cfg.OnInterval(iv)
				r.resp.iv.Reset()
				if r.resp.ivK != nil {
					r.resp.ivK.Reset()
				}
			}
			for next <= now {
				next += tick
			}
		}
		r.mu.Unlock()
	}
}

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
