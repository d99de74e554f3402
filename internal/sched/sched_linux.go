package sched

import (
	"errors"
	"fmt"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

func pin(cpu int) error {
	var set unix.CPUSet
	set.Set(cpu)
	return unix.SchedSetaffinity(0, &set) // 0: the calling thread
}

// startCPUs and startErr are the process's CPUs as it started, before
// any thread of it was pinned (a pinned thread that ends may be the main
// thread, which the runtime keeps).
var startCPUs, startErr = affinity()

func allowed() ([]int, error) { return startCPUs, startErr }

func processCPU() (user, system time.Duration, err error) {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		return 0, 0, err
	}
	return time.Duration(ru.Utime.Nano()), time.Duration(ru.Stime.Nano()), nil
}

func affinity() ([]int, error) {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		return nil, err
	}
	var out []int
	for c := range len(set) * int(unsafe.Sizeof(set[0])) * 8 {
		if set.IsSet(c) {
			out = append(out, c)
		}
	}
	return out, nil
}

func realtime(prio int) error {
	attr := unix.SchedAttr{Policy: unix.SCHED_FIFO, Priority: uint32(prio)}
	attr.Size = uint32(unsafe.Sizeof(attr))
	return unix.SchedSetAttr(0, &attr, 0)
}

func nice(n int) error {
	// On Linux a thread has its own niceness, named by its thread ID.
	return unix.Setpriority(unix.PRIO_PROCESS, unix.Gettid(), n)
}

func mlockall() error {
	err := unix.Mlockall(unix.MCL_CURRENT | unix.MCL_FUTURE)
	if errors.Is(err, unix.ENOMEM) {
		// Without CAP_IPC_LOCK the kernel says ENOMEM for a limit.
		return fmt.Errorf("%w: more memory than RLIMIT_MEMLOCK (ulimit -l) allows without CAP_IPC_LOCK", err)
	}
	return err
}

func explain(err error) error {
	if errors.Is(err, unix.EPERM) || errors.Is(err, unix.EACCES) {
		return errNotPermitted
	}
	return err
}
