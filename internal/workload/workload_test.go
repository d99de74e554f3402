package workload

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"
)

var lim = Limits{MinSize: 64, MaxSize: 65000}

func TestParseYAMLAndJSON(t *testing.T) {
	yamlDoc := `
- name: small
  weight: 3
  size: 100
  reply_size: 512
  hold: 1ms
- weight: 1
  size: 1400
  gap: 10ms
`
	jsonDoc := `[{"name":"small","weight":3,"size":100,"reply_size":512,"hold":"1ms"},{"weight":1,"size":1400,"gap":10000000}]`
	for name, doc := range map[string]string{"yaml": yamlDoc, "json": jsonDoc} {
		es, err := Parse([]byte(doc), lim)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		want := []Entry{
			{Name: "small", Weight: 3, Size: 100, ReplySize: 512, Hold: Duration(time.Millisecond)},
			{Name: "entry 2", Weight: 1, Size: 1400, Gap: Duration(10 * time.Millisecond)},
		}
		if len(es) != 2 || es[0] != want[0] || es[1] != want[1] {
			t.Fatalf("%s: Parse = %+v, want %+v", name, es, want)
		}
	}
}

func TestParseErrors(t *testing.T) {
	for _, doc := range []string{
		``,
		`[]`,
		`- {weight: 0, size: 100}`,
		`- {weight: 1, size: 10}`,
		`- {weight: 1, size: 100, reply_size: 70000}`,
		`- {weight: 1, size: 100, hold: -1ms}`,
		`- {weight: 1, size: 100, colour: blue}`,
		`- {weight: 1, size: 100, hold: soon}`,
	} {
		if _, err := Parse([]byte(doc), lim); !errors.Is(err, ErrBad) {
			t.Errorf("Parse(%q) = %v, want ErrBad", doc, err)
		}
	}
}

func TestPickerWeights(t *testing.T) {
	es := []Entry{{Weight: 1}, {Weight: 3}, {Weight: 6}}
	p := NewPicker(es, 1)
	const n = 100000
	var got [3]int
	for i := 0; i < n; i++ {
		got[p.Pick()]++
	}
	for i, w := range []float64{0.1, 0.3, 0.6} {
		// Binomial: the share is within 1% of the weight with
		// overwhelming probability at this n.
		if share := float64(got[i]) / n; math.Abs(share-w) > 0.01 {
			t.Errorf("entry %d drawn %.3f of the time, want %.1f", i, share, w)
		}
	}
	a, b := NewPicker(es, 9), NewPicker(es, 9)
	for i := 0; i < 100; i++ {
		if a.Pick() != b.Pick() {
			t.Fatal("the same seed drew different entries")
		}
	}
}

// TestParseNotAList: a mapping at the top says what is wanted.
func TestParseNotAList(t *testing.T) {
	_, err := Parse([]byte("entries:\n  - {weight: 1, size: 100}\n"), Limits{MinSize: 64, MaxSize: 65000})
	if !errors.Is(err, ErrBad) || !strings.Contains(err.Error(), "want a list of entries") {
		t.Fatalf("Parse(mapping) = %v, want ErrBad saying a list is wanted", err)
	}
}
