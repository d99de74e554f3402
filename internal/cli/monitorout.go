package cli

import (
	"fmt"
	"io"
	"sync/atomic"
	"time"

	"github.com/volley-net/volley/internal/client"
	"github.com/volley-net/volley/internal/monitor"
	"github.com/volley-net/volley/internal/report"
	"github.com/volley-net/volley/internal/result"
)

// sinks hands every target to each of its sinks: the exporter and the
// JSON-lines writer, say.
type sinks []monitor.Sink

func (s sinks) Start(t *monitor.Target) monitor.Recorder {
	rs := make(recorders, 0, len(s))
	for _, k := range s {
		rs = append(rs, k.Start(t))
	}
	if len(rs) == 1 {
		return rs[0]
	}
	return rs
}

func (s sinks) Stop(t *monitor.Target) {
	for _, k := range s {
		k.Stop(t)
	}
}

// recorders is a target's Recorder in each sink.
type recorders []monitor.Recorder

func (rs recorders) Reply(r client.Reply) {
	for _, x := range rs {
		x.Reply(r)
	}
}

func (rs recorders) Interval(iv result.Interval) {
	for _, x := range rs {
		x.Interval(iv)
	}
}

func (rs recorders) Session(open bool, err error) {
	for _, x := range rs {
		x.Session(open, err)
	}
}

// jsonlBacklog is how many lines the JSON-lines writer holds while its
// output is slow; past it lines are dropped and counted, so that a
// stalled stdout never stalls a measurement.
const jsonlBacklog = 4096

// jsonlSink writes a JSON line per target per interval (--format jsonl),
// from one goroutine of its own: the targets hand it their intervals and
// never wait for the output.
type jsonlSink struct {
	lines   chan jsonlLine
	dropped atomic.Uint64
	done    chan struct{}
	err     error // the first write error, once done
}

type jsonlLine struct {
	target string
	labels map[string]string
	iv     result.Interval
}

// newJSONLSink starts the writer to w; close stops it once what it holds
// is written.
func newJSONLSink(w io.Writer) *jsonlSink {
	s := &jsonlSink{lines: make(chan jsonlLine, jsonlBacklog), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		for l := range s.lines {
			if err := report.WriteJSONLTarget(w, l.target, l.labels, l.iv); err != nil && s.err == nil {
				s.err = err
			}
		}
	}()
	return s
}

// jsonlFlushWait is how long close waits for the lines held to be
// written: a stdout nobody reads must not keep volley from ending.
const jsonlFlushWait = 2 * time.Second

// close writes what is held (waiting at most jsonlFlushWait) and returns
// the first write error, and how many lines were dropped.
func (s *jsonlSink) close() error {
	close(s.lines)
	select {
	case <-s.done:
	case <-time.After(jsonlFlushWait):
		return fmt.Errorf("--format jsonl: the output took no line for %s: %d lines not written", jsonlFlushWait, len(s.lines)+1)
	}
	if n := s.dropped.Load(); n > 0 && s.err == nil {
		return fmt.Errorf("--format jsonl: %d interval lines dropped: the output did not keep up", n)
	}
	return s.err
}

func (s *jsonlSink) Start(t *monitor.Target) monitor.Recorder {
	return &jsonlRecorder{s: s, target: t.Name, labels: t.Labels}
}

func (s *jsonlSink) Stop(*monitor.Target) {}

// jsonlRecorder is one target's side of the writer.
type jsonlRecorder struct {
	s      *jsonlSink
	target string
	labels map[string]string
}

func (r *jsonlRecorder) Reply(client.Reply)  {}
func (r *jsonlRecorder) Session(bool, error) {}

func (r *jsonlRecorder) Interval(iv result.Interval) {
	select {
	case r.s.lines <- jsonlLine{r.target, r.labels, iv}:
	default:
		r.s.dropped.Add(1)
	}
}
