package client

import (
	"io"
	"strconv"
	"sync"
)

// LogHeader is the first line of a probe log (--log): one CSV line per
// measured probe follows, and one more for each reply that comes late or
// twice. Times are Unix nanoseconds (T1..T4 and the scheduled send time
// of an open-loop probe, 0 when there is none); delays are nanoseconds,
// empty where the probe's fate leaves them unknown. The stamps are taken
// in user space.
const LogHeader = "flow,seq,status,t1_ns,t2_ns,t3_ns,t4_ns,sched_ns,rtt_ns,response_ns,up_ns,down_ns\n"

// Probe statuses in the log.
const (
	logReceived  = "received"
	logLost      = "lost"
	logLate      = "late"
	logDuplicate = "duplicate"
)

// LogWriter is where the flows of a run write their probe logs; it takes
// whole lines only, so that flows do not cut into each other's.
type LogWriter struct {
	mu  sync.Mutex
	w   io.Writer
	err error
}

// NewLogWriter writes the log header to w and returns the writer for the
// flows.
func NewLogWriter(w io.Writer) (*LogWriter, error) {
	if _, err := io.WriteString(w, LogHeader); err != nil {
		return nil, err
	}
	return &LogWriter{w: w}, nil
}

func (l *LogWriter) write(b []byte) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err == nil {
		_, l.err = l.w.Write(b)
	}
}

// Err returns the first error writing the log.
func (l *LogWriter) Err() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.err
}

// probeLog is a flow's side of the log: lines gather in buf and go out
// whole when it fills and when the run ends. Appending a line allocates
// nothing.
type probeLog struct {
	out  *LogWriter
	flow int
	buf  []byte
}

const logFlushAt = 64 << 10

func newProbeLog(out *LogWriter, flow int) *probeLog {
	return &probeLog{out: out, flow: flow, buf: make([]byte, 0, logFlushAt+512)}
}

// line logs probe seq. t2, t3, t4 are 0 when unknown; delays are written
// only for a reply that came (t4 != 0).
func (l *probeLog) line(seq uint64, status string, t1, t2, t3, t4, sched, holdNs int64) {
	b := l.buf
	b = strconv.AppendInt(b, int64(l.flow), 10)
	b = append(b, ',')
	b = strconv.AppendUint(b, seq, 10)
	b = append(b, ',')
	b = append(b, status...)
	for _, t := range [...]int64{t1, t2, t3, t4, sched} {
		b = append(b, ',')
		b = strconv.AppendInt(b, t, 10)
	}
	if t1 != 0 && t4 != 0 {
		for _, d := range [...]int64{t4 - t1, t3 - t2 - holdNs, t2 - t1, t4 - t3} {
			b = append(b, ',')
			b = strconv.AppendInt(b, d, 10)
		}
	} else {
		b = append(b, ",,,,"...)
	}
	b = append(b, '\n')
	l.buf = b
	if len(b) >= logFlushAt {
		l.flush()
	}
}

// flush writes the lines gathered so far.
func (l *probeLog) flush() {
	if len(l.buf) > 0 {
		l.out.write(l.buf)
		l.buf = l.buf[:0]
	}
}
