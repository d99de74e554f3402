//go:build linux

package pace

import (
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

const (
	futexWaitPrivate = 0 | 128 // FUTEX_WAIT | FUTEX_PRIVATE_FLAG
	futexWakePrivate = 1 | 128 // FUTEX_WAKE | FUTEX_PRIVATE_FLAG
)

// futexWait sleeps for d ns unless *w no longer holds v, or until
// futexWake; the thread's timer slack is lowered to 1ns first (whichever
// thread the goroutine is on), so the sleep ends on time.
func futexWait(w *atomic.Uint32, v uint32, d int64) bool {
	_ = prepareThread() // as the Waiter's threads: a timer slack of 1ns
	ts := unix.NsecToTimespec(d)
	unix.Syscall6(unix.SYS_FUTEX, uintptr(unsafe.Pointer(w)), futexWaitPrivate, uintptr(v), uintptr(unsafe.Pointer(&ts)), 0, 0)
	return true
}

// futexWake wakes the goroutine sleeping in futexWait on w.
func futexWake(w *atomic.Uint32) {
	unix.RawSyscall6(unix.SYS_FUTEX, uintptr(unsafe.Pointer(w)), futexWakePrivate, 1, 0, 0, 0)
}
