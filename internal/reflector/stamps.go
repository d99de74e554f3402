package reflector

import (
	"net/netip"

	"github.com/volley-net/volley/internal/stats"
	"github.com/volley-net/volley/internal/transport"
	"github.com/volley-net/volley/internal/tstamp"
	"github.com/volley-net/volley/internal/wire"
)

// Response times and kernel stamps. Every reply the reflector sends is
// accounted once it has left: its response time T3−T2 (less the hold)
// goes into the response-time distribution, and into the log (Config.Log)
// as a line. With kernel stamps (Config.Stamps), a reply waits in txq
// until the socket's error queue gives its transmit stamp T3k; the session
// then keeps it to send to the client on its next reply (wire.Stamps), and
// the kernel response time T3k−T2k is accounted too.

// LogHeader is the first line of a reflector's probe log (--log): a line
// per reply sent follows. Times are Unix nanoseconds: T2 and T3 as the
// reflector read its clock, and the kernel's (or NIC's) stamps where it has
// them (empty otherwise); response times leave out the hold.
const LogHeader = "peer,session,seq,t2_ns,t3_ns,t2_kernel_ns,t3_kernel_ns,hold_ns,response_ns,response_kernel_ns\n"

// sentReply is what the reflector knows of a reply it answered a probe
// with.
type sentReply struct {
	addr    netip.AddrPort
	token   uint64
	seq     uint64
	t2, t3  int64
	t2k     int64
	hold    int64
	id      uint32 // its transmit stamp's ID
	pending bool
}

// txRing is how many replies may wait for their transmit stamps.
const txRing = 4096

// stamper is a reflector's kernel-stamp state.
type stamper struct {
	sock transport.Stamper
	txq  [txRing]sentReply
	tx   [64]tstamp.TxStamp
}

// responses are the reflector's response-time distributions: the
// interval's and the run's, in user space and from kernel stamps.
type responses struct {
	iv, total   *stats.Dist
	ivK, totalK *stats.Dist // nil without kernel stamps
}

// replied accounts a reply that left, with its kernel transmit stamp t3k
// (0: none).
func (r *Reflector) replied(m *sentReply, t3k int64) {
	resp := m.t3 - m.t2 - m.hold
	r.resp.iv.Record(resp)
	r.resp.total.Record(resp)
	if t3k != 0 && m.t2k != 0 && r.resp.ivK != nil {
		r.resp.ivK.Record(t3k - m.t2k - m.hold)
		r.resp.totalK.Record(t3k - m.t2k - m.hold)
	}
	if t3k != 0 {
		if s := r.sessions[m.token]; s != nil {
			if s.t3q == nil {
				s.t3q = new(t3Queue)
			}
			s.t3q.push(m.seq, t3k)
		}
	}
	if l := r.log; l != nil {
		l.AddrPort(m.addr)
		l.Hex(m.token)
		l.Uint(m.seq)
		l.Int(m.t2)
		l.Int(m.t3)
		l.Stamp(m.t2k)
		l.Stamp(t3k)
		l.Int(m.hold)
		l.Int(resp)
		l.Delay(m.t2k, t3k, m.hold)
		l.End()
	}
}

// sent accounts the reply m, which left with transmit-stamp ID id: at
// once without kernel stamps, else once its stamp comes.
func (r *Reflector) sent(m *sentReply, id uint32) {
	if r.stamps == nil {
		r.replied(m, 0)
		return
	}
	e := &r.stamps.txq[id%txRing]
	if e.pending {
		r.replied(e, 0) // its stamp never came
	}
	*e = *m
	e.id, e.pending = id, true
}

// drainTx takes in the transmit stamps waiting on the socket.
func (r *Reflector) drainTx() {
	st := r.stamps
	for {
		n, err := st.sock.ReadTxStamps(st.tx[:])
		for _, t := range st.tx[:n] {
			if e := &st.txq[t.ID%txRing]; e.pending && e.id == t.ID {
				e.pending = false
				r.replied(e, t.Best())
			}
		}
		if err != nil || n < len(st.tx) {
			return
		}
	}
}

// flushReplies accounts the replies still waiting for their stamps, and
// writes out the log.
func (r *Reflector) flushReplies() {
	if r.stamps != nil {
		r.drainTx()
		for i := range r.stamps.txq {
			if e := &r.stamps.txq[i]; e.pending {
				e.pending = false
				r.replied(e, 0)
			}
		}
	}
	if r.log != nil {
		r.log.Flush()
	}
}

// putStamps writes the stamps block into the reply pkt of session s, with
// its probe's kernel receive stamp t2k, when the probe asked for it and
// the reply has room, and sets or clears FlagStamps in h to say which.
func (r *Reflector) putStamps(pkt []byte, h *wire.Header, s *session, t2k int64) {
	if h.Flags&wire.FlagStamps == 0 {
		return
	}
	if r.stamps == nil || len(pkt) < wire.HeaderLen+wire.StampsLen+r.tagLen() {
		h.Flags &^= wire.FlagStamps
		return
	}
	st := wire.Stamps{T2K: t2k}
	if s.t3q != nil {
		st.PrevSeq, st.PrevT3K = s.t3q.pop()
	}
	wire.PutStamps(pkt, st)
}

// followUps writes into b the kernel transmit stamps the session's replies
// did not get to carry, as follow-ups, and returns their length; with any,
// it sets FlagStamps in the CloseAck's header h.
func (r *Reflector) followUps(b []byte, s *session, h *wire.Header) int {
	n := 0
	for s.t3q != nil && len(b)-n >= wire.FollowUpLen {
		seq, t3k := s.t3q.pop()
		if seq == 0 {
			break
		}
		wire.PutFollowUp(b[n:], seq, t3k)
		n += wire.FollowUpLen
	}
	if n > 0 {
		h.Flags |= wire.FlagStamps
	}
	return n
}

// t3Queue holds the kernel transmit stamps of a session's replies until
// later replies carry them, one each, oldest first. When replies leave in
// batches, several stamps come back at once; as each reply carries one,
// the queue keeps up while the client sends at a steady rate. When it is
// full the oldest is dropped (its probe's line lacks T3k).
type t3Queue struct {
	seq        [64]uint64
	t3k        [64]int64
	head, tail uint64
}

func (q *t3Queue) push(seq uint64, t3k int64) {
	if q.tail-q.head == uint64(len(q.seq)) {
		q.head++
	}
	q.seq[q.tail%uint64(len(q.seq))], q.t3k[q.tail%uint64(len(q.seq))] = seq, t3k
	q.tail++
}

// pop returns the oldest stamp, or zeros when there is none.
func (q *t3Queue) pop() (uint64, int64) {
	if q.head == q.tail {
		return 0, 0
	}
	i := q.head % uint64(len(q.seq))
	q.head++
	return q.seq[i], q.t3k[i]
}

// newResponses makes the distributions; kernel ones too with kernel.
func newResponses(kernel bool) responses {
	rs := responses{iv: stats.NewDist(), total: stats.NewDist()}
	if kernel {
		rs.ivK, rs.totalK = stats.NewDist(), stats.NewDist()
	}
	return rs
}

// mergeDists returns a new distribution holding a's and b's values (nil
// when both are nil).
func mergeDists(a, b *stats.Dist) *stats.Dist {
	if a == nil && b == nil {
		return nil
	}
	d := stats.NewDist()
	for _, o := range []*stats.Dist{a, b} {
		if o != nil {
			d.Merge(o)
		}
	}
	return d
}
