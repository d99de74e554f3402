package report

import (
	"testing"
	"time"
)

// TestIntervalLines: the server prints the line of each interval in which
// something happened (packets, drops, send errors, sessions opened or
// gone, the interface dropping), and while nothing does, one line a
// minute covering the quiet stretch.
func TestIntervalLines(t *testing.T) {
	sec := ReflectorCounts{Elapsed: time.Second}
	with := func(f func(*ReflectorCounts)) ReflectorCounts {
		s := sec
		f(&s)
		return s
	}
	type step struct {
		s          ReflectorCounts
		nicDropped uint64
		print      bool
		span       time.Duration
	}
	idle := func(n int) []step { // n quiet seconds, none printed
		steps := make([]step, n)
		for i := range steps {
			steps[i] = step{s: sec}
		}
		return steps
	}
	cat := func(parts ...[]step) []step {
		var all []step
		for _, p := range parts {
			all = append(all, p...)
		}
		return all
	}
	for _, tt := range []struct {
		name  string
		steps []step
	}{
		{"idle: a line a minute", cat(idle(59), []step{{s: sec, print: true, span: time.Minute}},
			idle(59), []step{{s: sec, print: true, span: time.Minute}})},
		{"packets in", cat(idle(3), []step{{s: with(func(s *ReflectorCounts) { s.PacketsIn = 1 }), print: true, span: time.Second}})},
		{"packets out", []step{{s: with(func(s *ReflectorCounts) { s.PacketsOut = 1 }), print: true, span: time.Second}}},
		{"drops", []step{{s: with(func(s *ReflectorCounts) { s.Drops = []Drop{{"short", 1}} }), print: true, span: time.Second}}},
		{"send errors", []step{{s: with(func(s *ReflectorCounts) { s.SendErrors = 1 }), print: true, span: time.Second}}},
		{"the interface drops", []step{{s: sec, nicDropped: 1, print: true, span: time.Second}}},
		{"a session opens, stays idle, and idles out", cat(
			[]step{{s: with(func(s *ReflectorCounts) { s.PacketsIn, s.SessionsOpened, s.Sessions = 1, 1, 1 }), print: true, span: time.Second}},
			[]step{{s: with(func(s *ReflectorCounts) { s.Sessions = 1 })}},
			[]step{{s: with(func(s *ReflectorCounts) { s.Sessions = 1 })}},
			[]step{{s: sec, print: true, span: time.Second}}, // gone
			idle(2))},
		{"activity restarts the minute", cat(idle(30), []step{{s: with(func(s *ReflectorCounts) { s.PacketsIn = 5 }), print: true, span: time.Second}},
			idle(59), []step{{s: sec, print: true, span: time.Minute}})},
		{"intervals longer than a minute", []step{
			{s: ReflectorCounts{Elapsed: 2 * time.Minute}, print: true, span: 2 * time.Minute},
			{s: ReflectorCounts{Elapsed: 2 * time.Minute}, print: true, span: 2 * time.Minute},
		}},
		{"uneven intervals", []step{
			{s: ReflectorCounts{Elapsed: 40 * time.Second}},
			{s: ReflectorCounts{Elapsed: 40 * time.Second}, print: true, span: 80 * time.Second},
			{s: ReflectorCounts{Elapsed: 40 * time.Second}},
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var q intervalLines
			for i, st := range tt.steps {
				span, show := q.take(st.s, st.nicDropped)
				if show != st.print || span != st.span {
					t.Fatalf("interval %d: take(%+v, %d) = %s, %v; want %s, %v", i+1, st.s, st.nicDropped, span, show, st.span, st.print)
				}
			}
		})
	}
}
