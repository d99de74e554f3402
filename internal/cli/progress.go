package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/volley-net/volley/internal/client"
	"github.com/volley-net/volley/internal/report"
	"github.com/volley-net/volley/internal/result"
)

// Live progress: while a client runs with stderr on a terminal, one line
// at the bottom says how far it is and what it measures, redrawn a few
// times a second in place (\r), as curl's or rsync --info=progress2's.
// The figures come from the run's Handler, never from the probes: each
// interval as it is reported, summed for the loss; the line shows the
// latest interval's rate and percentiles, so with -i 10s they change
// every ten seconds while the elapsed time ticks on.
//
// All that goes to the terminal while the line is up passes through one
// place (progress.mu): a write takes the line off (\r, erase to the end
// of the line), writes, and puts it back when the write ended a line. So
// no report line ever shares a row with the progress line, and when the
// run ends the line is erased before the summary is written.

// progressEvery is how often the line is redrawn.
const progressEvery = 250 * time.Millisecond

// progressInterval is the interval the client is asked for, and none
// printed, when the user turned intervals off (-i 0): the progress line's
// figures come from intervals.
const progressInterval = time.Second

// eraseLine takes the progress line off: back to the start of the row,
// and erase to its end.
const eraseLine = "\r\x1b[K"

// terminal is what progress needs of the terminal it draws on; tests
// fake it.
type terminal interface {
	io.Writer
	// Width is the terminal's width in columns, 0 when unknown.
	Width() int
}

// terminalOf returns w as a terminal when it is one.
type terminalOf func(w io.Writer) (terminal, bool)

// progress draws a run's status line on a terminal and passes the other
// writes to that terminal (see through).
type progress struct {
	term  terminal
	now   func() time.Time
	every time.Duration

	mu      sync.Mutex // the terminal's: held only while writing to it
	running bool       // the line may be drawn
	shown   bool       // the line is on the screen
	partial bool       // the last write through left its row unfinished
	line    string     // the line, as last made (not cut to the width)

	fmu sync.Mutex // guards st
	st  progressStatus

	once sync.Once
	quit chan struct{}
	done chan struct{} // closed when the drawing goroutine returns (nil: none started)
}

// newProgress returns the progress line the flags and the writers call
// for, or nil: it is drawn when stderr is a terminal whose TERM is not
// "dumb", unless -q or --no-progress, or the probe log (--log -) goes to
// stdout on a terminal (the log's lines are the live view then).
func newProgress(f clientFlags, stdout, stderr io.Writer, isTerm terminalOf) *progress {
	if f.quiet || f.noProgress || os.Getenv("TERM") == "dumb" {
		return nil
	}
	term, ok := isTerm(stderr)
	if !ok {
		return nil
	}
	if _, ok := isTerm(stdout); ok && f.log == "-" {
		return nil
	}
	return &progress{term: term, now: time.Now, every: progressEvery, quit: make(chan struct{})}
}

// writers returns stdout and stderr as the run is to write to them:
// stderr (the terminal) through p, and stdout too when it is a terminal
// (most likely the same one).
func (p *progress) writers(stdout, stderr io.Writer, isTerm terminalOf) (io.Writer, io.Writer) {
	if _, ok := isTerm(stdout); ok {
		stdout = p.through(stdout)
	}
	return stdout, p.through(stderr)
}

// hook makes h feed p the run's figures, around what h already does, and
// draw from the start of the run until its end or ctx's. With intervals
// off (a negative cfg.ReportInterval), it asks the client for intervals
// of progressInterval and passes none on: the report prints none, and
// reports -i 0 (see clientReport.complete). It reports whether it did.
func (p *progress) hook(ctx context.Context, cfg *client.Config, h *client.Funcs) (asked bool) {
	onStart, onInterval, onReconnect, onEnd := h.OnStart, h.OnInterval, h.OnReconnect, h.OnEnd
	if cfg.ReportInterval < 0 {
		cfg.ReportInterval, onInterval, asked = progressInterval, nil, true
	}
	h.OnStart = func(res *result.Result) {
		if onStart != nil {
			onStart(res)
		}
		p.start(ctx, res.Config)
	}
	h.OnInterval = func(iv result.Interval) {
		if onInterval != nil {
			onInterval(iv)
		}
		p.update(func(st *progressStatus) { st.interval(iv) })
	}
	h.OnReconnect = func(rc result.Reconnect) {
		if onReconnect != nil {
			onReconnect(rc)
		}
		p.update(func(st *progressStatus) {
			if !rc.Resumed {
				st.reconnecting++
			} else if st.reconnecting > 0 {
				st.reconnecting--
			}
		})
	}
	h.OnEnd = func(res *result.Result) {
		p.stop()
		if onEnd != nil {
			onEnd(res)
		}
	}
	return asked
}

// update changes the figures with f.
func (p *progress) update(f func(st *progressStatus)) {
	p.fmu.Lock()
	f(&p.st)
	p.fmu.Unlock()
}

// start notes the run's configuration and starts drawing, until stop or
// until ctx is done (a signal: the run is finishing, and volley may say
// so on stderr).
func (p *progress) start(ctx context.Context, c result.Config) {
	p.update(func(st *progressStatus) {
		st.started, st.start = true, p.now()
		st.duration, st.count, st.warmup, st.oneWay = c.Duration, c.Count, c.WarmupDuration, c.OneWay
		st.undivided = c.Peer != nil && !c.Peer.Directions
	})
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.quit: // stopped already
		return
	default:
	}
	p.running = true
	p.done = make(chan struct{})
	go p.draw(ctx, p.done)
}

// draw redraws the line every p.every until stop, or ctx is done.
func (p *progress) draw(ctx context.Context, done chan<- struct{}) {
	defer close(done)
	t := time.NewTicker(p.every)
	defer t.Stop()
	p.tick()
	for {
		select {
		case <-ctx.Done():
			p.erase()
			return
		case <-p.quit:
			return
		case <-t.C:
			p.tick()
		}
	}
}

// tick makes the line from the figures and draws it.
func (p *progress) tick() {
	p.fmu.Lock()
	st := p.st
	p.fmu.Unlock()
	line := st.line(p.now().Sub(st.start))
	width := p.term.Width()
	p.mu.Lock()
	defer p.mu.Unlock()
	p.line = line
	p.show(width)
}

// show draws the line, cut to width, unless it may not be drawn now.
// p.mu is held.
func (p *progress) show(width int) {
	if !p.running || p.partial || p.line == "" {
		return
	}
	p.term.Write([]byte("\r" + fit(p.line, width) + "\x1b[K"))
	p.shown = true
}

// erase takes the line off for good.
func (p *progress) erase() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.running = false
	if p.shown {
		p.term.Write([]byte(eraseLine))
		p.shown = false
	}
}

// stop stops drawing and erases the line. It may be called more than
// once, and before start.
func (p *progress) stop() {
	p.once.Do(func() {
		p.mu.Lock()
		close(p.quit)
		done := p.done
		p.mu.Unlock()
		if done != nil {
			<-done
		}
		p.erase()
	})
}

// through returns w, the terminal p draws on or a writer to the same
// screen, as a writer that takes the line off before each write, and
// puts it back after one that ends a row.
func (p *progress) through(w io.Writer) io.Writer { return &throughWriter{p: p, w: w} }

type throughWriter struct {
	p *progress
	w io.Writer
}

func (t *throughWriter) Write(b []byte) (int, error) {
	p := t.p
	width := p.term.Width()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.shown {
		p.term.Write([]byte(eraseLine))
		p.shown = false
	}
	n, err := t.w.Write(b)
	if n > 0 {
		p.partial = b[n-1] != '\n'
	}
	p.show(width)
	return n, err
}

// fit cuts line to fit a terminal width columns wide, leaving the last
// column free (a terminal may wrap on writing it); 80 when width is
// unknown. Every rune of the line takes one column.
func fit(line string, width int) string {
	if width <= 0 {
		width = 80
	}
	limit := width - 1
	if utf8.RuneCountInString(line) <= limit {
		return line
	}
	n := 0
	for i := range line {
		if n == limit {
			return line[:i]
		}
		n++
	}
	return line
}

// progressStatus is what the line shows: the run's bounds, and the
// figures of its intervals so far.
type progressStatus struct {
	started  bool
	start    time.Time
	duration time.Duration // after warm-up; 0: bounded by count
	count    uint64
	warmup   time.Duration
	oneWay   bool
	// undivided: the peer's answers do not split loss by direction.
	undivided bool

	intervals    int
	measured     time.Duration // the end of the latest interval
	rate         float64       // its probes sent a second
	rtt          result.Latency
	counts       result.Counts // summed
	reconnecting int           // flows whose session is lost, not taken over yet
}

// interval adds iv's figures.
func (st *progressStatus) interval(iv result.Interval) {
	st.intervals++
	st.measured = iv.End
	if span := iv.End - iv.Start; span > 0 {
		st.rate = float64(iv.Counts.Sent) / span.Seconds()
	}
	st.rtt = iv.RTT
	st.counts.Add(iv.Counts)
}

// line makes the status line, elapsed into the run: the time (of the
// total, with --duration), the probes measured (of the total, with
// --count), the latest interval's rate, RTT p50 and p99 (its mean and
// max when the run's percentiles lack them), and the loss so far, split
// up and down.
func (st progressStatus) line(elapsed time.Duration) string {
	if !st.started {
		return ""
	}
	var b strings.Builder
	long := max(elapsed, st.warmup+st.duration) >= 100*time.Second
	b.WriteString(clockTime(elapsed, long))
	switch {
	case st.warmup > 0 && elapsed < st.warmup && st.intervals == 0:
		b.WriteString(" warm-up")
	case st.duration > 0:
		b.WriteString("/" + clockTime(st.warmup+st.duration, long))
	}
	if st.count > 0 {
		fmt.Fprintf(&b, "  %d/%d probes", st.counts.Sent, st.count)
	}
	if st.intervals > 0 {
		b.WriteString("  " + report.SI(st.rate) + " probes/s")
		if !st.oneWay {
			st.rttFigures(&b)
			lost := st.counts.Lost
			fmt.Fprintf(&b, "  loss %d", lost)
			if resolved := st.counts.Sent - st.counts.InFlight; resolved > 0 {
				fmt.Fprintf(&b, " (%.2f%%)", 100*float64(lost)/float64(resolved))
			}
			if !st.undivided {
				fmt.Fprintf(&b, " up %d down %d", st.counts.LostUp, st.counts.LostDown)
			}
		}
	}
	if st.reconnecting > 0 {
		b.WriteString("  reconnecting")
	}
	return b.String()
}

// rttFigures writes the latest interval's RTT p50 and p99, or its mean
// and max in their place when the run does not compute them.
func (st progressStatus) rttFigures(b *strings.Builder) {
	if st.rtt.Count == 0 {
		b.WriteString("  no replies")
		return
	}
	p50, p99 := "mean "+report.Duration(st.rtt.Mean), "max "+report.Duration(st.rtt.Max)
	for _, p := range st.rtt.Percentiles {
		switch p.P {
		case 50:
			p50 = "p50 " + report.Duration(p.Value)
		case 99:
			p99 = "p99 " + report.Duration(p.Value)
		}
	}
	b.WriteString("  " + p50 + "  " + p99)
}

// clockTime formats d as seconds with a tenth, or with long (a run of
// 100s or more) as h:mm:ss, as curl and rsync show time.
func clockTime(d time.Duration, long bool) string {
	if !long {
		return strconv.FormatFloat(d.Truncate(100*time.Millisecond).Seconds(), 'f', 1, 64) + "s"
	}
	s := int64(d / time.Second)
	return fmt.Sprintf("%d:%02d:%02d", s/3600, s/60%60, s%60)
}
