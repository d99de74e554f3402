package saved

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
)

// maxValue is the largest value of a document held at once (its
// configuration, summary or flows; its intervals are read one by one, each
// at most MaxLine).
const maxValue = 64 << 20

// tooLongError is a line, or a value of a document, over its limit.
type tooLongError struct {
	line  int
	what  string // "a line", "a value"
	limit int64
}

func (e *tooLongError) Error() string {
	return fmt.Sprintf("%v: %s longer than %d MiB (volley writes a few KB)", ErrNotVolley, e.what, e.limit>>20)
}

func (e *tooLongError) Unwrap() error { return ErrNotVolley }

// capReader reads the file: it stops at ctx's end, and at a line longer
// than maxLine (0: any) or, in a document, at a value longer than its
// limit. It counts the lines, and in a document keeps where the newlines
// not yet passed are, to name the line of an error.
type capReader struct {
	ctx     context.Context
	r       io.Reader
	maxLine int64
	off     int64 // bytes read
	run     int64 // bytes since the last newline
	lines   int   // newlines read
	over    error // returned by the next Read

	doc       bool
	passed    int     // newlines before nl, forgotten
	nl        []int64 // offsets of the newlines not forgotten
	markAt    int64   // a document: where the value being read starts
	markLimit int64
	kept      []byte // a document: the bytes read from markAt on
}

func (c *capReader) Read(p []byte) (int, error) {
	if c.over != nil {
		return 0, c.over
	}
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	n, err := c.r.Read(p)
	for b := p[:n]; len(b) > 0; {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			c.run += int64(len(b))
			break
		}
		c.lines++
		if c.doc {
			c.nl = append(c.nl, c.off+int64(n-len(b)+i))
		}
		c.run, b = 0, b[i+1:]
	}
	if c.doc {
		c.kept = append(c.kept, p[:n]...)
	}
	c.off += int64(n)
	switch {
	case c.maxLine > 0 && c.run > c.maxLine:
		c.over = &tooLongError{line: c.lines + 1, what: "a line", limit: c.maxLine}
	case c.doc && c.markLimit > 0 && c.off-c.markAt > c.markLimit:
		c.over = &tooLongError{line: c.lineAt(c.markAt), what: "a value", limit: c.markLimit}
	}
	return n, err
}

// document turns c to reading a document: lines of any length, and the
// newlines' places and the bytes of the value being read kept from now
// on. nl are the places of the newlines read but not yet decoded, kept
// the bytes.
func (c *capReader) document(nl []int64, kept []byte) {
	c.doc, c.maxLine, c.over = true, 0, nil
	c.kept = kept
	c.nl, c.passed = nl, c.lines-len(nl)
}

// mark says that a value of at most limit bytes starts at file offset at,
// and forgets the newlines before it.
func (c *capReader) mark(at, limit int64) {
	// Drop the bytes before at once they are half of those kept, so that
	// each byte is moved at most once on average.
	if d := at - (c.off - int64(len(c.kept))); d > 0 && d >= int64(len(c.kept))/2 {
		c.kept = append(c.kept[:0], c.kept[min(d, int64(len(c.kept))):]...)
	}
	c.markAt, c.markLimit = at, limit
	i, _ := slices.BinarySearch(c.nl, at)
	if i > 0 {
		c.passed += i
		c.nl = append(c.nl[:0], c.nl[i:]...)
	}
}

// since returns the bytes read from file offset at on (at or after the
// last mark).
func (c *capReader) since(at int64) []byte {
	from := c.off - int64(len(c.kept))
	return c.kept[min(max(at-from, 0), int64(len(c.kept))):]
}

// lineAt is the line (from 1) of file offset off, for off at or after
// the last mark.
func (c *capReader) lineAt(off int64) int {
	i, _ := slices.BinarySearch(c.nl, off)
	return c.passed + i + 1
}

// lineError turns a reading error into an Error at its line.
func lineError(name string, line int, err error) error {
	var tl *tooLongError
	if errors.As(err, &tl) {
		return &Error{Name: name, Line: tl.line, Err: err}
	}
	return &Error{Name: name, Line: line, Err: err}
}
