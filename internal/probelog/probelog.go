// Package probelog writes per-probe CSV logs (--log) for the client and the
// reflector: each flow or worker gathers whole lines in its own buffer and
// hands them to the one shared Writer when the buffer fills and at the end,
// so that lines never cut into each other and appending one allocates
// nothing.
package probelog

import (
	"io"
	"net/netip"
	"strconv"
	"sync"
)

// Writer is where the buffers of a run write; it takes whole lines only.
type Writer struct {
	mu  sync.Mutex
	w   io.Writer
	err error
}

// NewWriter writes header (a CSV header line) to w and returns the Writer.
func NewWriter(w io.Writer, header string) (*Writer, error) {
	if _, err := io.WriteString(w, header); err != nil {
		return nil, err
	}
	return &Writer{w: w}, nil
}

func (l *Writer) write(b []byte) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err == nil {
		_, l.err = l.w.Write(b)
	}
}

// Err returns the first error writing the log.
func (l *Writer) Err() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.err
}

// flushAt is the size at which a Buffer hands its lines over.
const flushAt = 64 << 10

// Buffer is one flow's or worker's lines. It is not safe for concurrent
// use. A line is built with the Append methods and ended with End.
type Buffer struct {
	out *Writer
	b   []byte
	sep bool // a field was appended to the current line
}

// NewBuffer returns a Buffer writing to out.
func NewBuffer(out *Writer) *Buffer {
	return &Buffer{out: out, b: make([]byte, 0, flushAt+1024)}
}

func (l *Buffer) comma() {
	if l.sep {
		l.b = append(l.b, ',')
	}
	l.sep = true
}

// Int appends an integer field.
func (l *Buffer) Int(v int64) {
	l.comma()
	l.b = strconv.AppendInt(l.b, v, 10)
}

// Uint appends an unsigned integer field.
func (l *Buffer) Uint(v uint64) {
	l.comma()
	l.b = strconv.AppendUint(l.b, v, 10)
}

// Hex appends v as 16 hexadecimal digits.
func (l *Buffer) Hex(v uint64) {
	l.comma()
	const digits = "0123456789abcdef"
	for i := 60; i >= 0; i -= 4 {
		l.b = append(l.b, digits[v>>uint(i)&0xf])
	}
}

// Stamp appends a time in Unix nanoseconds, or an empty field for 0 (none).
func (l *Buffer) Stamp(t int64) {
	l.comma()
	if t != 0 {
		l.b = strconv.AppendInt(l.b, t, 10)
	}
}

// Delay appends end−start, or an empty field when either is 0 (unknown).
func (l *Buffer) Delay(start, end, less int64) {
	l.comma()
	if start != 0 && end != 0 {
		l.b = strconv.AppendInt(l.b, end-start-less, 10)
	}
}

// String appends a field as it is (it must need no quoting).
func (l *Buffer) String(s string) {
	l.comma()
	l.b = append(l.b, s...)
}

// AddrPort appends an address and port.
func (l *Buffer) AddrPort(a netip.AddrPort) {
	l.comma()
	l.b = a.AppendTo(l.b)
}

// End ends the line, and hands the lines over when the buffer is full.
func (l *Buffer) End() {
	l.b = append(l.b, '\n')
	l.sep = false
	if len(l.b) >= flushAt {
		l.Flush()
	}
}

// Flush hands the lines gathered so far to the Writer.
func (l *Buffer) Flush() {
	if len(l.b) > 0 {
		l.out.write(l.b)
		l.b = l.b[:0]
	}
}
