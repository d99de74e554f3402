package saved

import (
	"fmt"
	"math"
	"reflect"
	"strings"
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
	replaced bool // a string held a control character
}

var (
	latencyType     = reflect.TypeFor[result.Latency]()
	intervalType    = reflect.TypeFor[result.Interval]()
	percentilesType = reflect.TypeFor[[]result.Percentile]()
	histogramType   = reflect.TypeFor[result.Histogram]()
	configType      = reflect.TypeFor[result.Config]()
)

// check walks v (a pointer), named path in errors (a JSON field path:
// "intervals[3].rtt.percentiles"), and returns what is wrong in it.
func (c *checker) check(v any, path string) *fieldError {
	return c.walk(reflect.ValueOf(v), path)
}

func (c *checker) walk(v reflect.Value, path string) *fieldError {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return nil
		}
		return c.walk(v.Elem(), path)
	case reflect.String:
		if s, ok := clean(v.String()); ok {
			v.SetString(s)
			c.replaced = true
		}
	case reflect.Slice, reflect.Array:
		if v.Type() == percentilesType {
			if err := checkPercentiles(v.Interface().([]result.Percentile), path); err != nil {
				return err
			}
		}
		for i := range v.Len() {
			if err := c.walk(v.Index(i), fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
	case reflect.Struct:
		if err := checkValue(v, path); err != nil {
			return err
		}
		t := v.Type()
		for i := range t.NumField() {
			f := t.Field(i)
			if !f.IsExported() {
				continue
			}
			if err := c.walk(v.Field(i), join(path, f)); err != nil {
				return err
			}
		}
	}
	return nil
}

// join is the path of field f of path.
func join(path string, f reflect.StructField) string {
	name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
	if name == "" || name == "-" {
		name = f.Name
	}
	if path == "" {
		return name
	}
	return path + "." + name
}

// checkValue checks the structs whose values have bounds.
func checkValue(v reflect.Value, path string) *fieldError {
	switch v.Type() {
	case intervalType:
		iv := v.Addr().Interface().(*result.Interval)
		if field, err := checkInterval(iv); err != nil {
			return &fieldError{strings.TrimPrefix(path+"."+field, "."), err}
		}
	case latencyType:
		l := v.Addr().Interface().(*result.Latency)
		if l.Count < 0 {
			return &fieldError{path + ".count", fmt.Errorf("%w: %d values", ErrNotVolley, l.Count)}
		}
	case configType:
		c := v.Addr().Interface().(*result.Config)
		if c.Duration < 0 || c.WarmupDuration < 0 {
			return &fieldError{path + ".duration_ns", fmt.Errorf("%w: a run of %d ns, after a warm-up of %d ns", ErrNotVolley, c.Duration, c.WarmupDuration)}
		}
	case histogramType:
		h := v.Addr().Interface().(*result.Histogram)
		if len(h.Bins) > maxBins {
			return &fieldError{path + ".bins", fmt.Errorf("%w: %d bins; volley writes at most %d", ErrNotVolley, len(h.Bins), maxBins)}
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
	}
	return "", nil
}

// checkPercentiles checks a latency's percentiles or a distribution's
// ladder: at most MaxPercentiles, each from 0 to 100.
func checkPercentiles(ps []result.Percentile, path string) *fieldError {
	if len(ps) > MaxPercentiles {
		return &fieldError{path, fmt.Errorf("%w: %d percentiles; volley writes at most %d", ErrNotVolley, len(ps), MaxPercentiles)}
	}
	for i, p := range ps {
		if !(p.P >= 0 && p.P <= 100) {
			return &fieldError{fmt.Sprintf("%s[%d].p", path, i), fmt.Errorf("%w: percentile %v, outside 0 to 100", ErrNotVolley, p.P)}
		}
	}
	return nil
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
