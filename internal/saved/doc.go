package saved

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"

	"github.com/volley-net/volley/internal/result"
)

// docReader decodes a document as a stream of tokens, so that its
// intervals are read one at a time, checked and thinned as they come:
// memory grows with what is kept, not with the file.
type docReader struct {
	ctx  context.Context
	cr   *capReader
	dec  *json.Decoder
	base int64 // the file offset of the decoder's first byte
	name string
	ck   checker
	thin *Thinner
}

// readDocument decodes the document read from r, which starts at file
// offset base.
func readDocument(ctx context.Context, cr *capReader, r io.Reader, base int64, name string) (*File, error) {
	d := &docReader{ctx: ctx, cr: cr, dec: json.NewDecoder(r), base: base, name: name, thin: NewThinner(MaxIntervals)}
	res := new(result.Result)
	if err := d.object(res); err != nil {
		return nil, err
	}
	if err := checkVersion(res); err != nil {
		return nil, &Error{Name: name, Line: 1, Err: err}
	}
	if fe := d.ck.check(res, ""); fe != nil {
		return nil, &Error{Name: name, Field: fe.field, Err: fe.err}
	}
	if res.Intervals != nil {
		res.Intervals = d.thin.Intervals()
		if res.Intervals == nil {
			res.Intervals = []result.Interval{}
		}
	}
	f := &File{Run: runOf(res), Kind: JSON}
	f.Notes = notes(d.thin, d.ck)
	return f, nil
}

// object decodes the document's object into res, its intervals through
// the thinner (res.Intervals is left non-nil when it has some).
func (d *docReader) object(res *result.Result) error {
	if err := d.delim('{'); err != nil {
		return err
	}
	fields := reflect.ValueOf(res).Elem()
	for d.dec.More() {
		d.cr.mark(d.base+d.dec.InputOffset(), maxValue)
		tok, err := d.dec.Token()
		if err != nil {
			return d.err(err, d.dec.InputOffset(), "")
		}
		key, _ := tok.(string)
		if strings.EqualFold(key, "intervals") {
			if err := d.intervals(res); err != nil {
				return err
			}
			continue
		}
		var raw json.RawMessage
		before := d.dec.InputOffset()
		if err := d.dec.Decode(&raw); err != nil {
			return d.valueErr(err, before, key)
		}
		start := d.dec.InputOffset() - int64(len(raw))
		if f := fieldOf(fields, key); f.IsValid() {
			if err := json.Unmarshal(raw, f.Addr().Interface()); err != nil {
				return d.err(err, start, key)
			}
		}
	}
	d.cr.mark(d.base+d.dec.InputOffset(), MaxLine) // what may follow: white space
	if err := d.delim('}'); err != nil {
		return err
	}
	if _, err := d.dec.Token(); !errors.Is(err, io.EOF) {
		return &Error{Name: d.name, Line: d.cr.lineAt(d.base + d.dec.InputOffset()), Err: fmt.Errorf("%w: more after the document", ErrNotVolley)}
	}
	return nil
}

// intervals reads the intervals array (or null), one interval at a time.
func (d *docReader) intervals(res *result.Result) error {
	tok, err := d.dec.Token()
	if err != nil {
		return d.err(err, d.dec.InputOffset(), "intervals")
	}
	if tok == nil {
		res.Intervals = nil
		return nil
	}
	if tok != json.Delim('[') {
		return &Error{Name: d.name, Line: d.cr.lineAt(d.base + d.dec.InputOffset()), Field: "intervals", Err: fmt.Errorf("%w: a JSON %v where volley writes an array", ErrNotVolley, tok)}
	}
	res.Intervals = []result.Interval{}
	for i := 0; d.dec.More(); i++ {
		if err := d.ctx.Err(); err != nil {
			return &Error{Name: d.name, Err: err}
		}
		path := fmt.Sprintf("intervals[%d]", i)
		before := d.dec.InputOffset()
		d.cr.mark(d.base+before, MaxLine)
		var raw json.RawMessage
		if err := d.dec.Decode(&raw); err != nil {
			return d.valueErr(err, before, path)
		}
		start := d.dec.InputOffset() - int64(len(raw))
		var iv result.Interval
		if err := json.Unmarshal(raw, &iv); err != nil {
			return d.err(err, start, path)
		}
		if fe := d.ck.check(&iv, path); fe != nil {
			return &Error{Name: d.name, Line: d.cr.lineAt(d.base + start), Field: fe.field, Err: fe.err}
		}
		d.thin.Add(iv)
	}
	d.cr.mark(d.base+d.dec.InputOffset(), MaxLine)
	_, err = d.dec.Token() // ]
	if err != nil {
		return d.err(err, d.dec.InputOffset(), "intervals")
	}
	return nil
}

// delim reads the delimiter want.
func (d *docReader) delim(want json.Delim) error {
	tok, err := d.dec.Token()
	if err != nil {
		return d.err(err, d.dec.InputOffset(), "")
	}
	if tok != want {
		return &Error{Name: d.name, Line: 1, Err: fmt.Errorf("%w: a JSON document is an object", ErrNotVolley)}
	}
	return nil
}

// err places a decoding error of the value at decoder offset at (its
// field path field) in the file.
func (d *docReader) err(err error, at int64, field string) error {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	var tl *tooLongError
	e := &Error{Name: d.name, Field: field, Err: err}
	lineAt := func(off int64) int { return d.cr.lineAt(d.base + max(off, 0)) }
	switch {
	case errors.As(err, &tl):
		e.Line = tl.line
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		e.Line, e.Field = d.cr.lines+1, ""
		e.Err = fmt.Errorf("%w: the JSON ends before it closes (cut short, or an interrupted run?)", ErrNotVolley)
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		e.Field = ""
	case errors.As(err, &syn):
		e.Line = lineAt(syn.Offset)
		e.Err = fmt.Errorf("%w: %v", ErrNotVolley, syn)
	case errors.As(err, &typ):
		e.Line = lineAt(at + typ.Offset)
		if typ.Field != "" {
			e.Field = strings.TrimPrefix(field+"."+typ.Field, ".")
		}
		e.Err = fmt.Errorf("%w: a JSON %s where volley writes %s", ErrNotVolley, typ.Value, typ.Type)
	default:
		e.Err = fmt.Errorf("%w: %v", ErrNotVolley, err)
	}
	return e
}

// valueErr places an error of decoding the value after decoder offset at:
// a syntax error's offset is not in the file, so the value is scanned
// again, from the bytes kept since at, for where it is wrong.
func (d *docReader) valueErr(err error, at int64, field string) error {
	var syn *json.SyntaxError
	if !errors.As(err, &syn) {
		return d.err(err, at, field)
	}
	b := d.cr.since(d.base + at)
	start := len(b) - len(bytes.TrimLeft(b, " \t\r\n,:"))
	var raw json.RawMessage
	if err2 := json.NewDecoder(bytes.NewReader(b[start:])).Decode(&raw); errors.As(err2, &syn) {
		return &Error{Name: d.name, Line: d.cr.lineAt(d.base + at + int64(start) + syn.Offset), Field: field, Err: fmt.Errorf("%w: %v", ErrNotVolley, syn)}
	}
	return &Error{Name: d.name, Field: field, Err: fmt.Errorf("%w: %v", ErrNotVolley, err)}
}

// fieldOf is the field of res (a struct value) that a JSON key names, as
// encoding/json matches them: exactly, else without regard to case.
func fieldOf(res reflect.Value, key string) reflect.Value {
	t := res.Type()
	fold := -1
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		if name == "" || name == "-" || !t.Field(i).IsExported() {
			continue
		}
		if name == key {
			return res.Field(i)
		}
		if fold < 0 && strings.EqualFold(name, key) {
			fold = i
		}
	}
	if fold >= 0 {
		return res.Field(fold)
	}
	return reflect.Value{}
}

// notes are what a reader should know of a file read: intervals merged,
// control characters replaced.
func notes(t *Thinner, ck checker) []string {
	var n []string
	if t.Stride() > 1 {
		n = append(n, fmt.Sprintf("%d intervals read: past %d, neighbours were merged (each kept one holds up to %d; counts, bytes and extremes exact, their percentiles the count-weighted mean)",
			t.Added(), MaxIntervals, t.Stride()))
	}
	if ck.replaced {
		n = append(n, noteReplaced)
	}
	return n
}
