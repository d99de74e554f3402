// Package saved reads volley's saved results back (volley report): a
// --format json document, a --format jsonl stream and the client's probe
// log (--log CSV). The kind is told by the content, never by the file's
// name. A document or a stream gives the result as the run wrote it; a
// probe log is rebuilt into one: intervals, summary and distribution
// computed from its lines with the same statistics the client uses, as it
// reads (its memory stays flat however long the log), and the probes kept
// for a plot up to a limit.
//
// Input is not trusted: whatever it holds, reading returns a result or an
// error that names the file, the line (and the field or column where it
// is known) and what is wrong, never a panic. Nor does it make volley hold
// or print many times its size: a line is at most MaxLine, a file keeps at
// most MaxIntervals intervals (neighbours merged past that, as a plot
// does: Thinner), a latency at most MaxPercentiles percentiles, values
// volley never writes (a percentile outside 0..100, an interval that ends
// before it starts, more lost than sent, a negative round trip) are
// errors, and control characters in its text are replaced, so that
// printing it cannot drive the terminal.
package saved

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/volley-net/volley/internal/chart"
	"github.com/volley-net/volley/internal/client"
	"github.com/volley-net/volley/internal/reflector"
	"github.com/volley-net/volley/internal/result"
)

// Kind is the kind of a saved file.
type Kind int

// The kinds of file read.
const (
	JSON     Kind = iota + 1 // one JSON document (--format json)
	JSONL                    // JSON lines (--format jsonl)
	ProbeLog                 // the client's probe log (--log), a CSV
)

// String names the kind as the flags do.
func (k Kind) String() string {
	switch k {
	case JSON:
		return "json"
	case JSONL:
		return "jsonl"
	case ProbeLog:
		return "probe log"
	}
	return "unknown"
}

// Options are how a file is read.
type Options struct {
	// Interval is the length of the intervals rebuilt from a probe log
	// (default 1s; negative: none, only the summary). Documents and
	// streams keep their own.
	Interval time.Duration
	// Percentiles are the percentiles to report (nil: the saved ones, or
	// client.DefaultPercentiles for a probe log). From a document or a
	// stream, each is taken from the saved figures, or from the
	// distribution where the saved percentiles lack it; one the RTT (a
	// one-way run's up) has in neither is an error. Other rows leave out
	// the percentiles they do not have.
	Percentiles []float64
	// MaxProbes bounds the probes kept from a probe log for a plot
	// (default DefaultMaxProbes): past it, none are kept.
	MaxProbes int
}

// DefaultMaxProbes is the most probes kept from a probe log for a plot;
// a log of more keeps none, and a plot draws the intervals' percentiles.
const DefaultMaxProbes = 10000

// File is a saved result read back.
type File struct {
	// Run is what a plot draws: Label is the name the file was read
	// under, Probes the probes of a probe log (nil from a document or a
	// stream, or past Options.MaxProbes).
	chart.Run
	Kind Kind
	// Truncated: a stream cut short (read with ErrTruncated); Result
	// holds its intervals, and their counts summed as the summary's.
	Truncated bool
	// Notes say what a reader of the rebuilt result should know: what a
	// probe log does not hold, and so what the result lacks.
	Notes []string
}

// Errors a caller may branch on with errors.Is.
var (
	// ErrNotVolley: the content is not a volley result.
	ErrNotVolley = errors.New("not a volley result")
	// ErrReflectorLog: the file is the reflector's probe log.
	ErrReflectorLog = errors.New("this is the reflector's probe log (volley server --log): volley report reads the client's (volley client --log), its documents and its JSON lines")
	// ErrNewer: the document's schema is newer than this volley reads.
	ErrNewer = errors.New("written by a newer volley")
	// ErrTruncated: a stream that ends before its result line. Read
	// returns the intervals read with it.
	ErrTruncated = errors.New("the stream ends without its result line (an interrupted run?): only its intervals are known")
	// ErrEmpty: a file with nothing in it.
	ErrEmpty = errors.New("empty file")
)

// Error is an error in a saved file: where, and why.
type Error struct {
	Name  string // the file, as named to Read
	Line  int    // from 1; 0 when not known
	Field string // the JSON field or CSV column, "" when not known
	Err   error
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.Name)
	if e.Line > 0 {
		fmt.Fprintf(&b, ": line %d", e.Line)
	}
	if e.Field != "" {
		fmt.Fprintf(&b, ": %s", e.Field)
	}
	fmt.Fprintf(&b, ": %v", e.Err)
	return b.String()
}

func (e *Error) Unwrap() error { return e.Err }

// Read reads the saved result in the file at path, named by the path in
// errors and by its base name as its Label. It stops, with ctx's error,
// when ctx ends; an open or a read that blocks (a FIFO) is not
// interrupted: a caller that must return at once reads in a goroutine.
func Read(ctx context.Context, path string, opt Options) (*File, error) {
	name, _ := clean(path) // a file's name may hold what drives a terminal
	f, err := os.Open(path)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err // the name is the Error's, cleaned
		}
		return nil, &Error{Name: name, Err: err}
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.IsDir() {
		return nil, &Error{Name: name, Err: errors.New("is a directory")}
	}
	label, _ := clean(filepath.Base(path))
	return readFrom(ctx, f, name, label, opt)
}

// ReadFrom reads a saved result from r, named name in errors and as the
// Label. With ErrTruncated it returns what it read too.
func ReadFrom(ctx context.Context, r io.Reader, name string, opt Options) (*File, error) {
	name, _ = clean(name)
	return readFrom(ctx, r, name, name, opt)
}

// readFrom reads a saved result from r, named name in errors and label
// in what it holds.
func readFrom(ctx context.Context, r io.Reader, name, label string, opt Options) (*File, error) {
	if opt.Interval == 0 {
		opt.Interval = time.Second
	}
	if opt.MaxProbes <= 0 {
		opt.MaxProbes = DefaultMaxProbes
	}
	cr := &capReader{ctx: ctx, r: r, maxLine: MaxLine}
	br := bufio.NewReaderSize(cr, 64<<10)
	// A byte order mark (a spreadsheet's CSV, say) is not content.
	if bom, _ := br.Peek(3); bytes.Equal(bom, []byte("\xef\xbb\xbf")) {
		br.Discard(3)
	}
	first, err := firstByte(br)
	if err != nil {
		if errors.Is(err, io.EOF) {
			return nil, &Error{Name: name, Err: ErrEmpty}
		}
		return nil, lineError(name, cr.lines+1, err)
	}
	var f *File
	switch first {
	case '{':
		f, err = readJSON(ctx, cr, br, name, opt)
	default:
		f, err = readCSV(ctx, br, name, label, opt)
	}
	if f != nil {
		f.Label = label
	}
	return f, err
}

// firstByte returns the first byte that is not white space, unread.
func firstByte(br *bufio.Reader) (byte, error) {
	for {
		c, err := br.ReadByte()
		if err != nil {
			return 0, err
		}
		switch c {
		case ' ', '\t', '\r', '\n':
			continue
		}
		return c, br.UnreadByte()
	}
}

// Headers of the probe logs, without their newlines.
var (
	clientHeader    = strings.TrimSuffix(client.LogHeader, "\n")
	reflectorHeader = strings.TrimSuffix(reflector.LogHeader, "\n")
)

// checkVersion checks the tool and schema version of a document or a
// stream's result.
func checkVersion(res *result.Result) error {
	switch {
	case res.Tool != "volley":
		return fmt.Errorf("%w: its tool is %q, not \"volley\"", ErrNotVolley, res.Tool)
	case res.SchemaVersion > result.SchemaVersion:
		return fmt.Errorf("%w: schema_version %d, and this volley reads up to %d: read it with a newer volley", ErrNewer, res.SchemaVersion, result.SchemaVersion)
	case res.SchemaVersion < 1:
		return fmt.Errorf("%w: schema_version %d", ErrNotVolley, res.SchemaVersion)
	}
	return nil
}
