// Package sched applies the scheduling of volley's measuring threads:
// CPU pinning (--cpu), real-time priority (--realtime, SCHED_FIFO), nice
// (--nice) and locked memory (--mlock). Each applies to the calling OS
// thread, so the caller locks its goroutine to it first. What the
// platform lacks fails with errors.ErrUnsupported, and what the user may
// not do fails with a clear error: never silently.
package sched

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Plan is what to apply to each measuring thread.
type Plan struct {
	CPUs     []int // pin thread i to CPUs[i % len(CPUs)] (none: no pinning)
	Realtime int   // SCHED_FIFO priority, 1 to 99 (0: none)
	Nice     int   // niceness, -20 to 19
	SetNice  bool  // Nice was given
}

// Empty reports whether p changes nothing.
func (p Plan) Empty() bool { return len(p.CPUs) == 0 && p.Realtime == 0 && !p.SetNice }

// ParseCPUs parses a CPU list such as "0", "0,2" or "0-3,6".
func ParseCPUs(s string) ([]int, error) {
	var out []int
	for _, part := range strings.Split(s, ",") {
		lo, hi, isRange := strings.Cut(strings.TrimSpace(part), "-")
		a, err := strconv.Atoi(lo)
		if err != nil || a < 0 {
			return nil, fmt.Errorf("bad CPU %q in %q (want a list such as 0,2-3)", part, s)
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil || b < a {
				return nil, fmt.Errorf("bad CPU range %q in %q (want a list such as 0,2-3)", part, s)
			}
		}
		for c := a; c <= b; c++ {
			out = append(out, c)
		}
	}
	return out, nil
}

// Apply applies p to the calling thread, the thread-th measuring thread
// (from 0), and says what it applied.
func (p Plan) Apply(thread int) (string, error) {
	var done []string
	if len(p.CPUs) > 0 {
		cpu := p.CPUs[thread%len(p.CPUs)]
		if err := pin(cpu); err != nil {
			return "", fmt.Errorf("--cpu %d: %w", cpu, err)
		}
		done = append(done, fmt.Sprintf("CPU %d", cpu))
	}
	if p.Realtime > 0 {
		if err := realtime(p.Realtime); err != nil {
			return "", fmt.Errorf("--realtime %d: %w", p.Realtime, explain(err))
		}
		done = append(done, fmt.Sprintf("SCHED_FIFO %d", p.Realtime))
	}
	if p.SetNice {
		if err := nice(p.Nice); err != nil {
			return "", fmt.Errorf("--nice %d: %w", p.Nice, explain(err))
		}
		done = append(done, fmt.Sprintf("nice %d", p.Nice))
	}
	return strings.Join(done, ", "), nil
}

// MlockAll locks the process's memory, now and to come.
func MlockAll() error {
	if err := mlockall(); err != nil {
		return fmt.Errorf("--mlock: %w", explain(err))
	}
	return nil
}

// errNotPermitted words a permission error.
var errNotPermitted = errors.New("not permitted: it needs root or CAP_SYS_NICE (CAP_IPC_LOCK and RLIMIT_MEMLOCK for --mlock)")
