package report

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"

	"github.com/volley-net/volley/internal/result"
)

// JSONStream writes the one JSON document WriteJSON writes, byte for byte,
// but over the run: the opening as the run starts, each interval as it
// ends, and the rest (summary, histogram, ...) at the end. A run then
// holds none of its intervals, so that its memory does not grow with its
// length (a day at 1s intervals is 86,400 of them, some 600 MB of
// indented JSON). The document is complete only once End has written it.
type JSONStream struct {
	w     io.Writer
	begun bool
	n     int // intervals written
	buf   bytes.Buffer
}

// NewJSONStream returns a JSONStream writing to w.
func NewJSONStream(w io.Writer) *JSONStream { return &JSONStream{w: w} }

// intervalsKey is where the intervals go in WriteJSON's document: the
// top-level key at its indentation. Strings hold newlines escaped, so the
// raw newline before it cannot be inside one.
var intervalsKey = []byte("\n  \"intervals\": [")

// document renders res without its intervals, and returns it cut around
// them: up to and including intervalsKey, and what follows "[]".
func (s *JSONStream) document(res *result.Result) (head, tail []byte, err error) {
	r := *res
	r.Intervals = []result.Interval{}
	s.buf.Reset()
	enc := json.NewEncoder(&s.buf)
	enc.SetIndent("", "  ")
	if err := enc.Encode(&r); err != nil {
		return nil, nil, err
	}
	doc := s.buf.Bytes()
	i := bytes.Index(doc, intervalsKey)
	if i < 0 || len(doc) < i+len(intervalsKey)+1 || doc[i+len(intervalsKey)] != ']' {
		return nil, nil, errors.New("report: no intervals in the JSON document")
	}
	i += len(intervalsKey)
	return doc[:i], doc[i+1:], nil
}

// Begin writes the document's opening, from res as the run opens (its
// configuration and start); res's intervals are not written.
func (s *JSONStream) Begin(res *result.Result) error {
	head, _, err := s.document(res)
	if err != nil {
		return err
	}
	s.begun = true
	_, err = s.w.Write(head)
	return err
}

// Interval writes the next interval.
func (s *JSONStream) Interval(iv result.Interval) error {
	s.buf.Reset()
	if s.n == 0 {
		s.buf.WriteString("\n    ")
	} else {
		s.buf.WriteString(",\n    ")
	}
	enc := json.NewEncoder(&s.buf)
	enc.SetIndent("    ", "  ")
	if err := enc.Encode(iv); err != nil {
		return err
	}
	s.buf.Truncate(s.buf.Len() - 1) // Encode's newline
	s.n++
	_, err := s.w.Write(s.buf.Bytes())
	return err
}

// End writes the rest of the document from res, the final result: its
// summary and all that follows the intervals. Its own Intervals are
// written too, after those written so far (none where the run streamed
// them). Without Begin, it writes the opening from res first.
func (s *JSONStream) End(res *result.Result) error {
	if !s.begun {
		if err := s.Begin(res); err != nil {
			return err
		}
	}
	for _, iv := range res.Intervals {
		if err := s.Interval(iv); err != nil {
			return err
		}
	}
	_, tail, err := s.document(res)
	if err != nil {
		return err
	}
	closing := "]"
	if s.n > 0 {
		closing = "\n  ]"
	}
	if _, err := io.WriteString(s.w, closing); err != nil {
		return err
	}
	_, err = s.w.Write(tail)
	return err
}
