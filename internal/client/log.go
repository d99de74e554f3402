package client

import (
	"io"

	"github.com/volley-net/volley/internal/probelog"
)

// LogHeader is the first line of a probe log (--log): one CSV line per
// measured probe follows, and one more for each reply that comes late or
// twice. Times are Unix nanoseconds: T1..T4 as the tool read its clock
// (0 when unknown), the scheduled send time of an open-loop probe (0 when
// there is none), and the kernel's (or NIC's) stamps T1k..T4k where the
// run has them (empty otherwise). Delays are nanoseconds, empty where the
// probe's fate or a missing stamp leaves them unknown; response times
// leave out the hold the reflector applied. With the reflector's stamps, a
// line is written when a later reply (or the CloseAck) brings the reply's
// T3k, so lines may come slightly out of order.
const LogHeader = "flow,seq,status,t1_ns,t2_ns,t3_ns,t4_ns,sched_ns,rtt_ns,response_ns,up_ns,down_ns," +
	"t1_kernel_ns,t2_kernel_ns,t3_kernel_ns,t4_kernel_ns,rtt_kernel_ns,response_kernel_ns,up_kernel_ns,down_kernel_ns\n"

// Probe statuses in the log.
const (
	logReceived  = "received"
	logLost      = "lost"
	logLate      = "late"
	logDuplicate = "duplicate"
)

// LogWriter is where the flows of a run write their probe logs; it takes
// whole lines only, so that flows do not cut into each other's.
type LogWriter = probelog.Writer

// NewLogWriter writes the log header to w and returns the writer for the
// flows.
func NewLogWriter(w io.Writer) (*LogWriter, error) { return probelog.NewWriter(w, LogHeader) }

// probeLog is a flow's side of the log. Appending a line allocates
// nothing.
type probeLog struct {
	b    *probelog.Buffer
	flow int
}

func newProbeLog(out *LogWriter, flow int) *probeLog {
	return &probeLog{b: probelog.NewBuffer(out), flow: flow}
}

// line logs probe seq, whose slot is s (nil when it has left the
// history). t2, t3, t4 are 0 when unknown; user-space delays are written
// only for a reply that came (t1 and t4 known).
func (l *probeLog) line(seq uint64, status string, s *slot, t2, t3, t4, holdNs int64) {
	var t1, sched int64
	var ks kernelSlot
	if s != nil {
		t1, sched, ks = s.sent, s.sched, s.kern
	}
	b := l.b
	b.Int(int64(l.flow))
	b.Uint(seq)
	b.String(status)
	for _, t := range [...]int64{t1, t2, t3, t4, sched} {
		b.Int(t)
	}
	switch {
	case t1 != 0 && t4 != 0 && t2 == 0 && t3 == 0:
		// A peer whose answers carry no times (echo://, connect://):
		// the round trip alone.
		b.Int(t4 - t1)
		b.String(",,")
	case t1 != 0 && t4 != 0:
		b.Int(t4 - t1)
		b.Int(t3 - t2 - holdNs)
		b.Int(t2 - t1)
		b.Int(t4 - t3)
	default:
		b.String(",,,")
	}
	if t4 == 0 {
		ks.t4k = 0 // a lost probe's slot may hold nothing of a reply
	}
	b.Stamp(ks.t1k)
	b.Stamp(ks.t2k)
	b.Stamp(ks.t3k)
	b.Stamp(ks.t4k)
	b.Delay(ks.t1k, ks.t4k, 0)
	b.Delay(ks.t2k, ks.t3k, holdNs)
	b.Delay(ks.t1k, ks.t2k, 0)
	b.Delay(ks.t3k, ks.t4k, 0)
	b.End()
}

// flush writes the lines gathered so far.
func (l *probeLog) flush() { l.b.Flush() }
