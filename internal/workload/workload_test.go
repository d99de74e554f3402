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

// TestExamples: the example files in examples/ load, and the YAML and the
// JSON one hold the same mix.
func TestExamples(t *testing.T) {
	udp := Limits{MinSize: 64, MaxSize: 65000}
	yamlMix, err := Load("../../examples/workload.yaml", udp)
	if err != nil {
		t.Fatalf("Load(examples/workload.yaml) = %v", err)
	}
	jsonMix, err := Load("../../examples/workload.json", udp)
	if err != nil {
		t.Fatalf("Load(examples/workload.json) = %v", err)
	}
	if len(yamlMix) < 2 || len(yamlMix) != len(jsonMix) {
		t.Fatalf("examples: %d entries in YAML, %d in JSON; want the same mix of two or more", len(yamlMix), len(jsonMix))
	}
	for i := range yamlMix {
		if yamlMix[i] != jsonMix[i] {
			t.Errorf("examples: entry %d is %+v in YAML, %+v in JSON", i+1, yamlMix[i], jsonMix[i])
		}
	}
}

// TestSizeSuffixes: sizes take K and M as the flags do.
func TestSizeSuffixes(t *testing.T) {
	es, err := Parse([]byte("- {weight: 1, size: 1K, reply_size: 2k}\n- {weight: 1, size: \"1M\"}\n"), Limits{MinSize: 64, MaxSize: 4 << 20})
	if err != nil || es[0].Size != 1024 || es[0].ReplySize != 2048 || es[1].Size != 1<<20 {
		t.Fatalf("Parse(1K, 2k, 1M) = %+v, %v; want sizes 1024, 2048 and 1048576", es, err)
	}
}

// TestErrorLines: a mistake names its line and field, in YAML's terms
// (never "JSON"), and a missing weight or size says both are needed.
func TestErrorLines(t *testing.T) {
	tests := []struct {
		doc  string
		want []string
	}{
		{"- weight: 1\n  size: 100\n- weight: 1\n  size: 1.5K\n", []string{"line 4:", "entry 2: size 1.5K", "64 to 65000"}},
		{"- weight: 1\n  size: 100\n  colour: blue\n", []string{"line 3:", `unknown field "colour"`, "weight, size"}},
		{"- name: big\n  size: 100\n", []string{"line 1:", "big: no weight", "needs a weight and a size"}},
		{"- weight: 2\n", []string{"line 1:", "no size"}},
		{"- weight: -1\n  size: 100\n", []string{"line 1:", "weight -1", "above 0"}},
		{"- weight: 1\n  size: 100\n  hold: 2\n", []string{"line 3:", "hold 2", "1us or more"}},
		{"- weight: 1\n  size: 100\n  gap: soon\n", []string{"line 3:", "gap soon"}},
		{"- weight: 1\n  size: [100]\n", []string{"line 2:", "size", "single value"}},
		{"- weight: 1\n  weight: 2\n  size: 100\n", []string{"line 2:", "weight given twice"}},
		{"- weight: 1\n\tsize: 100\n", []string{"line 2:"}},
		{"[{\"weight\": 1, \"size\": 100},\n {\"weight\": 1, \"size\": \"big\"}]", []string{"line 2:", "size big"}},
	}
	for _, tt := range tests {
		_, err := Parse([]byte(tt.doc), lim)
		if !errors.Is(err, ErrBad) {
			t.Errorf("Parse(%q) = %v, want ErrBad", tt.doc, err)
			continue
		}
		msg := err.Error()
		for _, w := range tt.want {
			if !strings.Contains(msg, w) {
				t.Errorf("Parse(%q) = %q, want it to say %q", tt.doc, msg, w)
			}
		}
		if strings.Contains(msg, "JSON") {
			t.Errorf("Parse(%q) = %q, which speaks of JSON", tt.doc, msg)
		}
	}
}
