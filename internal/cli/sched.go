package cli

import (
	"fmt"
	"io"
	"runtime"
	"slices"
	"sync"

	"github.com/spf13/cobra"

	"github.com/volley-net/volley/internal/sched"
)

// schedFlags are the scheduling flags the client and the server share.
type schedFlags struct {
	cpus     string
	realtime int
	nice     int
	mlock    bool
}

func (f *schedFlags) register(cmd *cobra.Command, what string) {
	fl := cmd.Flags()
	fl.StringVar(&f.cpus, "cpu", "", "pin the "+what+" to these CPUs, one each in turn (a list such as 0,2-3)")
	fl.IntVar(&f.realtime, "realtime", 0, "run the "+what+" SCHED_FIFO at this priority, 1 to 99 (needs root or CAP_SYS_NICE)")
	fl.IntVar(&f.nice, "nice", 0, "run the "+what+" at this niceness, -20 to 19 (below 0 needs root or CAP_SYS_NICE)")
	fl.BoolVar(&f.mlock, "mlock", false, "lock the process's memory (mlockall), so that no page fault stalls a measurement")
}

// check checks the flags without applying them: a usage error (exit 2)
// for a CPU the process may not run on, a priority or niceness out of
// range; and an error for what the user may not do, found by applying the
// plan to a thread made for the purpose (which then ends). Callers check
// before they open or print anything, so that a server that says it
// listens will run.
func (f *schedFlags) check(cmd *cobra.Command) (sched.Plan, error) {
	var p sched.Plan
	changed := cmd.Flags().Changed
	if f.cpus != "" {
		cpus, err := sched.ParseCPUs(f.cpus)
		if err != nil {
			return p, usagef("--cpu: %v", err)
		}
		allowed, err := sched.Allowed()
		if err != nil { // the platform does not say: the runtime's count
			allowed = make([]int, runtime.NumCPU())
			for i := range allowed {
				allowed[i] = i
			}
		}
		for _, c := range cpus {
			if !slices.Contains(allowed, c) {
				return p, usagef("--cpu %d: want CPUs this process may run on: %s", c, sched.FormatCPUs(allowed))
			}
		}
		p.CPUs = cpus
	}
	if changed("realtime") && (f.realtime < 1 || f.realtime > 99) {
		return p, usagef("--realtime %d: want 1 to 99", f.realtime)
	}
	p.Realtime = f.realtime
	if changed("nice") {
		if f.nice < -20 || f.nice > 19 {
			return p, usagef("--nice %d: want -20 to 19", f.nice)
		}
		p.Nice, p.SetNice = f.nice, true
	}
	if p.Empty() {
		return p, nil
	}
	// Try it on a thread of its own, which ends with its goroutine.
	tried := make(chan error)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread goes with the goroutine
		_, err := p.Apply(0)
		tried <- err
	}()
	return p, <-tried
}

// plan checks the flags (see check), locks memory if --mlock asks, and
// returns what applies the plan to each measuring thread, saying so on
// w; nil if there is nothing to apply. Notes go to w as they happen, so
// a caller whose stdout must begin with its address passes stderr.
func (f *schedFlags) plan(cmd *cobra.Command, w io.Writer) (func(thread int, name string) error, error) {
	p, err := f.check(cmd)
	if err != nil {
		return nil, err
	}
	if f.mlock {
		// Process-wide and done once: doing it is the only sure check.
		if err := sched.MlockAll(); err != nil {
			return nil, err
		}
		fmt.Fprintln(w, "volley: memory locked (mlockall)")
	}
	if p.Empty() {
		return nil, nil
	}
	var mu sync.Mutex
	next := 0
	return func(thread int, name string) error {
		mu.Lock()
		k := next
		next++
		mu.Unlock()
		what, err := p.Apply(k)
		if err != nil {
			return err
		}
		mu.Lock()
		fmt.Fprintf(w, "volley: %s thread: %s\n", name, what)
		mu.Unlock()
		return nil
	}, nil
}
