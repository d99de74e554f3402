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
	"time"
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

// maxCPU bounds a CPU number in a list, so that a typo such as 0-9999999
// cannot make a list that size; no kernel numbers CPUs this high.
const maxCPU = 1<<16 - 1

// ParseCPUs parses a CPU list such as "0", "0,2" or "0-3,6".
func ParseCPUs(s string) ([]int, error) {
	var out []int
	for _, part := range strings.Split(s, ",") {
		lo, hi, isRange := strings.Cut(strings.TrimSpace(part), "-")
		a, err := strconv.Atoi(lo)
		if err != nil || a < 0 || a > maxCPU {
			return nil, fmt.Errorf("bad CPU %q in %q (want a list such as 0,2-3)", part, s)
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil || b < a || b > maxCPU {
				return nil, fmt.Errorf("bad CPU range %q in %q (want a list such as 0,2-3)", part, s)
			}
		}
		for c := a; c <= b; c++ {
			out = append(out, c)
		}
	}
	return out, nil
}

// FormatCPUs writes cpus, ascending, as a list that ParseCPUs reads:
// runs of three or more as ranges ("0-3,6").
func FormatCPUs(cpus []int) string {
	var b strings.Builder
	for i := 0; i < len(cpus); {
		j := i
		for j+1 < len(cpus) && cpus[j+1] == cpus[j]+1 {
			j++
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		switch {
		case j == i:
			fmt.Fprint(&b, cpus[i])
		case j == i+1:
			fmt.Fprintf(&b, "%d,%d", cpus[i], cpus[j])
		default:
			fmt.Fprintf(&b, "%d-%d", cpus[i], cpus[j])
		}
		i = j + 1
	}
	return b.String()
}

// Allowed returns the CPUs the process may run on (its affinity when it
// started, as runtime.NumCPU counts them), ascending; ErrUnsupported
// where the platform does not say.
func Allowed() ([]int, error) { return allowed() }

// ProcessCPU returns the CPU time the process has used so far, in user
// and system mode; ErrUnsupported where the platform does not say.
func ProcessCPU() (user, system time.Duration, err error) { return processCPU() }

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
