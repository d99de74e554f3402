package saved

import (
	"fmt"
	"math"
	"reflect"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/volley-net/volley/internal/result"
)

// Limits on what a saved file may hold, so that a hostile one cannot make
// volley report hold or print many times more than its content.
const (
	// MaxLine is the longest line of a stream or a probe log, and the
	// largest interval of a document: volley's are a few KB.
	MaxLine = 16 << 20
	// MaxPercentiles is the most percentiles a latency (or a
	// distribution's ladder) may hold: volley writes at most 100.
	MaxPercentiles = 100
	// maxBins is the most bins of a histogram: volley's hold ten a decade.
	maxBins = 1000
)

// noteReplaced is the note of a file whose text held control characters.
const noteReplaced = "control characters in the file's text were replaced (with U+FFFD)"

// checker checks the values of a result read and replaces the control
// characters in its strings.
type checker struct {
	replaced bool      // a string held a control character
	path     []segment // where the walk is
}

// segment is a step of a field path: a field's name, or an index.
type segment struct {
	name  string
	index int
}

var (
	latencyType     = reflect.TypeFor[result.Latency]()
	intervalType    = reflect.TypeFor[result.Interval]()
	percentilesType = reflect.TypeFor[[]result.Percentile]()
	histogramType   = reflect.TypeFor[result.Histogram]()
	configType      = reflect.TypeFor[result.Config]()
	loadType        = reflect.TypeFor[result.Load]()
)

// check walks v (a pointer), at path in errors (a JSON field path:
// "intervals[3].rtt.percentiles"), and returns what is wrong in it.
func (c *checker) check(v any, path string) *fieldError {
	c.path = append(c.path[:0], segment{name: path, index: -1})
	return c.walk(reflect.ValueOf(v))
}

// at is the path where the walk is.
func (c *checker) at() string {
	var b strings.Builder
	for _, s := range c.path {
		switch {
		case s.name == "":
			if s.index >= 0 {
				fmt.Fprintf(&b, "[%d]", s.index)
			}
		case b.Len() > 0:
			b.WriteString("." + s.name)
		default:
			b.WriteString(s.name)
		}
	}
	return b.String()
}

func (c *checker) walk(v reflect.Value) *fieldError {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return nil
		}
		return c.walk(v.Elem())
	case reflect.String:
		if s, ok := clean(v.String()); ok {
			v.SetString(s)
			c.replaced = true
		}
	case reflect.Slice, reflect.Array:
		if v.Type() == percentilesType {
			return checkPercentiles(v.Interface().([]result.Percentile), c.at)
		}
		if !walked(v.Type().Elem()) {
			return nil
		}
		for i := range v.Len() {
			c.path = append(c.path, segment{index: i})
			if err := c.walk(v.Index(i)); err != nil {
				return err
			}
			c.path = c.path[:len(c.path)-1]
		}
	case reflect.Struct:
		if err := checkValue(v, c.at); err != nil {
			return err
		}
		for _, f := range fieldsOf(v.Type()) {
			c.path = append(c.path, segment{name: f.name})
			if err := c.walk(v.Field(f.index)); err != nil {
				return err
			}
			c.path = c.path[:len(c.path)-1]
		}
	}
	return nil
}

// field is a field of a struct that the checker walks.
type field struct {
	index int
	name  string
}

var fieldCache sync.Map // reflect.Type to []field

// fieldsOf lists the fields of struct type t that hold a string or a
// value checked.
func fieldsOf(t reflect.Type) []field {
	if fs, ok := fieldCache.Load(t); ok {
		return fs.([]field)
	}
	var fs []field
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() || !walked(f.Type) {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "" || name == "-" {
			name = f.Name
		}
		fs = append(fs, field{i, name})
	}
	fieldCache.Store(t, fs)
	return fs
}

var walkedCache sync.Map // reflect.Type to bool

// walked says whether a value of type t may hold a string or a value
// checked.
func walked(t reflect.Type) bool {
	if w, ok := walkedCache.Load(t); ok {
		return w.(bool)
	}
	walkedCache.Store(t, false) // a type that holds itself: decided below
	w := false
	switch t {
	case latencyType, intervalType, percentilesType, histogramType, configType, loadType:
		w = true
	default:
		switch t.Kind() {
		case reflect.String, reflect.Interface:
			w = true
		case reflect.Pointer, reflect.Slice, reflect.Array:
			w = walked(t.Elem())
		case reflect.Map:
			w = walked(t.Key()) || walked(t.Elem())
		case reflect.Struct:
			for i := range t.NumField() {
				if f := t.Field(i); f.IsExported() && walked(f.Type) {
					w = true
				}
			}
		}
	}
	walkedCache.Store(t, w)
	return w
}

// checkValue checks the structs whose values have bounds.
func checkValue(v reflect.Value, at func() string) *fieldError {
	switch v.Type() {
	case intervalType:
		iv := v.Addr().Interface().(*result.Interval)
		if field, err := checkInterval(iv); err != nil {
			return &fieldError{strings.TrimPrefix(at()+"."+field, "."), err}
		}
	case latencyType:
		l := v.Addr().Interface().(*result.Latency)
		if l.Count < 0 {
			return &fieldError{at() + ".count", fmt.Errorf("%w: %d values", ErrNotVolley, l.Count)}
		}
	case configType:
		c := v.Addr().Interface().(*result.Config)
		if c.Duration < 0 || c.WarmupDuration < 0 {
			return &fieldError{at() + ".duration_ns", fmt.Errorf("%w: a run of %d ns, after a warm-up of %d ns", ErrNotVolley, c.Duration, c.WarmupDuration)}
		}
		if field, err := checkConfig(c); err != nil {
			return &fieldError{at() + "." + field, err}
		}
	case loadType:
		if field, err := checkLoad(v.Addr().Interface().(*result.Load)); err != nil {
			return &fieldError{at() + "." + field, err}
		}
	case histogramType:
		h := v.Addr().Interface().(*result.Histogram)
		if len(h.Bins) > maxBins {
			return &fieldError{at() + ".bins", fmt.Errorf("%w: %d bins; volley writes at most %d", ErrNotVolley, len(h.Bins), maxBins)}
		}
	}
	return nil
}

// checkInterval checks an interval's times and counts, and returns the
// field that is wrong.
func checkInterval(iv *result.Interval) (string, error) {
	c := iv.Counts
	switch {
	case iv.Start < 0 || iv.End < 0:
		return "start_ns", fmt.Errorf("%w: an interval from %d ns to %d ns: before the run began", ErrNotVolley, iv.Start, iv.End)
	case iv.End < iv.Start:
		return "end_ns", fmt.Errorf("%w: an interval that ends (%d ns) before it starts (%d ns)", ErrNotVolley, iv.End, iv.Start)
	case c.Lost > c.Sent || c.Received > c.Sent:
		return "counts", fmt.Errorf("%w: %d lost and %d received of %d sent", ErrNotVolley, c.Lost, c.Received, c.Sent)
	case math.IsNaN(c.LossPercent) || c.LossPercent < 0 || c.LossPercent > 100:
		return "counts.loss_percent", fmt.Errorf("%w: %v", ErrNotVolley, c.LossPercent)
	case iv.RTT.Min < 0:
		return "rtt.min_ns", fmt.Errorf("%w: %d: a round trip is read on one clock and is never negative", ErrNotVolley, iv.RTT.Min)
	}
	return "", nil
}

// checkConfig checks that a configuration's sizes, counts and durations,
// none of which volley writes below zero, are not, and returns the field
// that is.
func checkConfig(c *result.Config) (string, error) {
	for _, f := range []struct {
		name string
		v    int64
	}{{"size", int64(c.Size)}, {"reply_size", int64(c.ReplySize)}, {"window", int64(c.Window)}, {"parallel", int64(c.Parallel)},
		{"burst", int64(c.Burst)}, {"timeout_ns", int64(c.Timeout)}, {"report_interval_ns", int64(c.ReportInterval)},
		{"hold_ns", int64(c.Hold)}, {"send_interval_ns", int64(c.SendInterval)}, {"period_ns", int64(c.Period)},
		{"threshold_ns", int64(c.Threshold)}} {
		if f.v < 0 {
			return f.name, fmt.Errorf("%w: %d, and volley writes none below zero", ErrNotVolley, f.v)
		}
	}
	if !(c.Rate >= 0) || math.IsInf(c.Rate, 0) {
		return "rate_pps", fmt.Errorf("%w: %v probes/s", ErrNotVolley, c.Rate)
	}
	return "", nil
}

// maxPhases is the most phases of a latency-under-load run: volley
// writes three.
const maxPhases = 16

// checkLoad checks a latency-under-load run's counts, durations and
// rates, none of which volley writes below zero, and the number of its
// phases, and returns the field that is wrong.
func checkLoad(l *result.Load) (string, error) {
	switch {
	case l.Streams < 0:
		return "streams", fmt.Errorf("%w: %d streams", ErrNotVolley, l.Streams)
	case l.Phase < 0:
		return "phase_ns", fmt.Errorf("%w: phases of %d ns", ErrNotVolley, l.Phase)
	case l.SeriesStep < 0:
		return "series_step_ns", fmt.Errorf("%w: a series step of %d ns", ErrNotVolley, l.SeriesStep)
	case len(l.Phases) > maxPhases:
		return "phases", fmt.Errorf("%w: %d phases; volley writes 3", ErrNotVolley, len(l.Phases))
	}
	for i, ph := range l.Phases {
		if ph.Streams < 0 || !(ph.BitsPerSecUp >= 0) || !(ph.BitsPerSecDown >= 0) {
			return fmt.Sprintf("phases[%d]", i), fmt.Errorf("%w: %d streams at %v bit/s up, %v down", ErrNotVolley, ph.Streams, ph.BitsPerSecUp, ph.BitsPerSecDown)
		}
	}
	for i, p := range l.Series {
		if p.At < 0 || !(p.BitsPerSecUp >= 0) || !(p.BitsPerSecDown >= 0) {
			return fmt.Sprintf("series[%d]", i), fmt.Errorf("%w: %v bit/s up and %v down at %d ns", ErrNotVolley, p.BitsPerSecUp, p.BitsPerSecDown, p.At)
		}
	}
	return "", nil
}

// checkPercentiles checks a latency's percentiles or a distribution's
// ladder: at most MaxPercentiles, each from 0 to 100.
func checkPercentiles(ps []result.Percentile, at func() string) *fieldError {
	if len(ps) > MaxPercentiles {
		return &fieldError{at(), fmt.Errorf("%w: %d percentiles; volley writes at most %d", ErrNotVolley, len(ps), MaxPercentiles)}
	}
	for i, p := range ps {
		if !(p.P >= 0 && p.P <= 100) {
			return &fieldError{fmt.Sprintf("%s[%d].p", at(), i), fmt.Errorf("%w: percentile %v, outside 0 to 100", ErrNotVolley, p.P)}
		}
	}
	return nil
}

// Clean returns s with each control character (C0, DEL and C1) replaced
// by U+FFFD: a file's name or text, fit to print on a terminal.
func Clean(s string) string {
	c, _ := clean(s)
	return c
}

// clean returns s with each control character (C0, DEL and C1) replaced
// by U+FFFD, and whether there were any.
func clean(s string) (string, bool) {
	if strings.IndexFunc(s, isControl) < 0 {
		return s, false
	}
	return strings.Map(func(r rune) rune {
		if isControl(r) {
			return utf8.RuneError
		}
		return r
	}, s), true
}

func isControl(r rune) bool { return r < 0x20 || r >= 0x7f && r <= 0x9f }
