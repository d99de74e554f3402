package sched

import (
	"errors"
	"unsafe"

	"golang.org/x/sys/unix"
)

func pin(cpu int) error {
	var set unix.CPUSet
	set.Set(cpu)
	return unix.SchedSetaffinity(0, &set) // 0: the calling thread
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

func mlockall() error { return unix.Mlockall(unix.MCL_CURRENT | unix.MCL_FUTURE) }

func explain(err error) error {
	if errors.Is(err, unix.EPERM) || errors.Is(err, unix.EACCES) {
		return errNotPermitted
	}
	return err
}
