package cli

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/volley-net/volley/internal/monitor"
	"github.com/volley-net/volley/internal/result"
)

// monitorTarget is a target for the writers' tests.
var monitorTarget = monitor.Target{Name: "t", URL: "udp://127.0.0.1:9"}

// TestWriteOnceJSONLines: --once --format jsonl gives every target a line:
// its result, or why it could not be measured.
func TestWriteOnceJSONLines(t *testing.T) {
	var b bytes.Buffer
	out := []onceResult{
		{Target: "up", Labels: map[string]string{"rack": "r1"}, Result: &result.Result{}},
		{Target: "down", Error: "no reflector answered"},
	}
	if err := writeOnce(&b, "jsonl", out); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("%d lines, want 2: %s", len(lines), b.String())
	}
	var got []struct{ Type, Target, Error string }
	for _, l := range lines {
		var v struct{ Type, Target, Error string }
		if err := json.Unmarshal([]byte(l), &v); err != nil {
			t.Fatalf("line %q: %v", l, err)
		}
		got = append(got, v)
	}
	if got[0].Type != "result" || got[0].Target != "up" || got[1].Type != "error" || got[1].Target != "down" || got[1].Error == "" {
		t.Fatalf("lines %+v, want up's result and down's error", got)
	}
}

// blocked is a writer nobody reads: every write waits for ever.
type blocked struct{ never chan struct{} }

func (w blocked) Write([]byte) (int, error) { <-w.never; return 0, nil }

// TestJSONLSinkBlockedOutput: a stdout nobody reads costs a measurement
// nothing (lines past the backlog are dropped and counted), and does not
// keep volley from ending: close gives up and says how many lines were
// not written.
func TestJSONLSinkBlockedOutput(t *testing.T) {
	s := newJSONLSink(blocked{make(chan struct{})})
	rec := s.Start(&monitorTarget)
	for range jsonlBacklog + 10 {
		rec.Interval(result.Interval{}) // never blocks
	}
	if n := s.dropped.Load(); n < 9 {
		t.Fatalf("%d lines dropped past the backlog, want at least 9", n)
	}
	if err := s.close(); err == nil || !strings.Contains(err.Error(), "not written") {
		t.Fatalf("close = %v, want an error saying lines were not written", err)
	}
}
