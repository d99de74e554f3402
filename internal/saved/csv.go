package saved

import (
	"bufio"
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/volley-net/volley/internal/client"
)

// The columns of the client's probe log (client.LogHeader), in order.
const (
	colFlow = iota
	colSeq
	colStatus
	colT1
	colT2
	colT3
	colT4
	colSched
	colRTT
	colResponse
	colUp
	colDown
	colT1K
	colT2K
	colT3K
	colT4K
	colRTTK
	colResponseK
	colUpK
	colDownK
	numCols
)

// columnNames are the header's names, for errors.
var columnNames = strings.Split(clientHeader, ",")

// Statuses of a probe log's lines.
const (
	statusReceived = iota
	statusLost
	statusLate
	statusDuplicate
)

var statuses = map[string]int{"received": statusReceived, "lost": statusLost, "late": statusLate, "duplicate": statusDuplicate}

// Limits on what a log may claim, so that a hostile one cannot make the
// reader hold more than its content: the flows a client runs, and the
// lines read before the first send time is settled.
const (
	maxFlows  = 4096
	firstRead = 1024
)

// logLine is one line of a probe log, parsed. A value of a column left
// empty is 0 with its bit in has clear.
type logLine struct {
	line   int // in the file
	flow   int
	seq    uint64
	status int
	v      [numCols]int64
	has    uint32 // bit i: column i had a value
}

func (l *logLine) ok(col int) bool { return l.has&(1<<col) != 0 }

// placed is the time that places l's probe in an interval, as the client
// places it: its scheduled send time in an open loop, else its send time
// (0: not in the line).
func (l *logLine) placed() int64 {
	if l.v[colSched] != 0 {
		return l.v[colSched]
	}
	return l.v[colT1]
}

// readCSV reads the client's probe log from br, after checking its header.
func readCSV(ctx context.Context, br *bufio.Reader, name, label string, opt Options) (*File, error) {
	head, err := br.ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, lineError(name, 1, err)
	}
	head = strings.TrimRight(head, "\r\n")
	switch {
	case head == reflectorHeader:
		return nil, &Error{Name: name, Line: 1, Err: ErrReflectorLog}
	case strings.HasPrefix(head, "flow,seq,status,") && head != clientHeader:
		return nil, &Error{Name: name, Line: 1, Err: fmt.Errorf("%w: a probe log whose columns this volley does not know (want %s)", ErrNotVolley, clientHeader)}
	case head != clientHeader:
		return nil, &Error{Name: name, Line: 1, Err: fmt.Errorf("%w: neither a JSON document, JSON lines nor the client's probe log (whose first line is %s)", ErrNotVolley, clientHeader)}
	}
	r := csv.NewReader(br)
	r.FieldsPerRecord = numCols
	r.ReuseRecord = true
	b := newBuilder(name, label, opt)
	var first []logLine // the first lines, until the first send time is settled
	for {
		if err := ctx.Err(); err != nil {
			return nil, &Error{Name: name, Err: err}
		}
		rec, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, csvError(name, err)
		}
		lineNo, _ := r.FieldPos(0)
		l, ferr := parseLine(rec, lineNo+1)
		if ferr != nil {
			return nil, &Error{Name: name, Line: lineNo + 1, Field: ferr.field, Err: ferr.err}
		}
		if b.origin == 0 && len(first) < firstRead {
			first = append(first, l)
			continue
		}
		if len(first) > 0 {
			if err := b.start(first); err != nil {
				return nil, err
			}
			first = nil
		}
		if err := b.add(&l); err != nil {
			return nil, err
		}
	}
	if err := b.start(first); err != nil {
		return nil, err
	}
	return b.file(), nil
}

// csvError places a CSV reader's error in the file: the header is line 1
// of the file, line 0 of what the reader read.
func csvError(name string, err error) error {
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		e := &Error{Name: name, Line: pe.Line + 1, Err: fmt.Errorf("%w: %v", ErrNotVolley, pe.Err)}
		if errors.Is(pe.Err, csv.ErrFieldCount) {
			e.Err = fmt.Errorf("%w: want the %d columns of the header", ErrNotVolley, numCols)
		}
		return e
	}
	return lineError(name, 0, err)
}

// fieldError is a bad value in a column.
type fieldError struct {
	field string
	err   error
}

// parseLine parses record rec, line lineNo of the file.
func parseLine(rec []string, lineNo int) (logLine, *fieldError) {
	l := logLine{line: lineNo}
	st, ok := statuses[rec[colStatus]]
	if !ok {
		return l, &fieldError{"status", fmt.Errorf("%w: %q is not a status volley writes (received, lost, late or duplicate)", ErrNotVolley, rec[colStatus])}
	}
	l.status = st
	for i, s := range rec {
		if i == colStatus || s == "" {
			continue
		}
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return l, &fieldError{columnNames[i], fmt.Errorf("%w: %q is not a whole number", ErrNotVolley, s)}
		}
		l.v[i] = v
		l.has |= 1 << i
	}
	switch {
	case !l.ok(colFlow) || !l.ok(colSeq):
		return l, &fieldError{"flow", fmt.Errorf("%w: a line without its flow and seq", ErrNotVolley)}
	case l.v[colFlow] < 0 || l.v[colFlow] > maxFlows:
		return l, &fieldError{"flow", fmt.Errorf("%w: flow %d, and volley runs 1 to %d", ErrNotVolley, l.v[colFlow], maxFlows)}
	case l.v[colSeq] < 1:
		return l, &fieldError{"seq", fmt.Errorf("%w: seq %d, and volley numbers probes from 1", ErrNotVolley, l.v[colSeq])}
	case (st == statusReceived || st == statusLost) && l.v[colT1] == 0:
		return l, &fieldError{"t1_ns", fmt.Errorf("%w: a %s probe without its send time", ErrNotVolley, rec[colStatus])}
	}
	// Times are Unix nanoseconds, 0 when unknown.
	for _, c := range []int{colT1, colT2, colT3, colT4, colSched} {
		if l.v[c] < 0 {
			return l, &fieldError{columnNames[c], fmt.Errorf("%w: %d: a time before 1970", ErrNotVolley, l.v[c])}
		}
	}
	// A round trip and the reflector's hold are each read on one clock:
	// never negative. Up and down may be (the clocks' offset).
	for _, c := range []int{colRTT, colResponse, colRTTK, colResponseK} {
		if l.v[c] < 0 {
			return l, &fieldError{columnNames[c], fmt.Errorf("%w: %d: a delay read on one clock is never negative", ErrNotVolley, l.v[c])}
		}
	}
	l.flow, l.seq = int(l.v[colFlow]), uint64(l.v[colSeq])
	return l, nil
}

// start settles the first send time from the first lines, then adds them.
// With no lines, there is nothing to settle.
func (b *builder) start(first []logLine) error {
	if len(first) == 0 {
		return nil
	}
	for i := range first {
		if t := first[i].placed(); t != 0 && (b.origin == 0 || t < b.origin) {
			b.origin = t
		}
	}
	if b.origin == 0 {
		b.origin = 1 // only late lines without a send time: nothing to place
	}
	for i := range first {
		if err := b.add(&first[i]); err != nil {
			return err
		}
	}
	return nil
}

// file renders what was read.
func (b *builder) file() *File {
	res := b.result()
	f := &File{Run: runOf(res), Kind: ProbeLog}
	if b.merged > 0 {
		f.Notes = append(f.Notes, fmt.Sprintf("%d intervals rebuilt: past %d, neighbours were merged (each kept one holds up to %d; counts and extremes exact, their percentiles the count-weighted mean)",
			len(b.closed), logIntervals, 1<<b.merged))
	}
	f.Probes = b.probes
	if b.over {
		f.Probes = nil
	}
	f.Notes = append(f.Notes, "rebuilt from a probe log, which does not say which way a lost probe was lost (lost up and down show 0),"+
		" nor which probes the reflector saw out of order (reordered up), the probes' sizes (no bytes or bit rates), the configuration or why the run ended")
	if b.patched > 0 {
		f.Notes = append(f.Notes, fmt.Sprintf("%d lines came after their interval was rebuilt: counted in it, their delays in the summary only", b.patched))
	}
	if b.over {
		f.Notes = append(f.Notes, fmt.Sprintf("more than %d probes: none kept for a plot, which draws each interval's percentiles", b.opt.MaxProbes))
	}
	return f
}

// The client's default percentiles, for a log read without --percentiles.
var defaultPercentiles = client.DefaultPercentiles

// nsSince returns t−origin as a duration, 0 for t before origin.
func nsSince(t, origin int64) time.Duration {
	if t <= origin {
		return 0
	}
	d := uint64(t) - uint64(origin)
	if d > 1<<62 {
		d = 1 << 62
	}
	return time.Duration(d)
}

// errTooManyFlows: a log of more flows than volley runs.
var errTooManyFlows = fmt.Errorf("%w: more than %d flows", ErrNotVolley, maxFlows)
