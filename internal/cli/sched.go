package cli

import (
	"fmt"
	"io"
	"runtime"
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

// plan checks the flags and returns the plan, checked by applying it to a
// thread made for the purpose (which then ends), and what applies it to
// each measuring thread, saying so on w.
func (f *schedFlags) plan(cmd *cobra.Command, w io.Writer) (func(thread int, name string) error, error) {
	var p sched.Plan
	changed := cmd.Flags().Changed
	if f.cpus != "" {
		cpus, err := sched.ParseCPUs(f.cpus)
		if err != nil {
			return nil, usagef("--cpu: %v", err)
		}
		for _, c := range cpus {
			if c >= runtime.NumCPU() {
				return nil, usagef("--cpu %d: this machine has CPUs 0 to %d", c, runtime.NumCPU()-1)
			}
		}
		p.CPUs = cpus
	}
	if changed("realtime") && (f.realtime < 1 || f.realtime > 99) {
		return nil, usagef("--realtime %d: want 1 to 99", f.realtime)
	}
	p.Realtime = f.realtime
	if changed("nice") {
		if f.nice < -20 || f.nice > 19 {
			return nil, usagef("--nice %d: want -20 to 19", f.nice)
		}
		p.Nice, p.SetNice = f.nice, true
	}
	if f.mlock {
		if err := sched.MlockAll(); err != nil {
			return nil, err
		}
		fmt.Fprintln(w, "volley: memory locked (mlockall)")
	}
	if p.Empty() {
		return nil, nil
	}
	// Try it on a thread of its own, which ends with its goroutine.
	check := make(chan error)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread goes with the goroutine
		_, err := p.Apply(0)
		check <- err
	}()
	if err := <-check; err != nil {
		return nil, err
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
