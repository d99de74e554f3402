//go:build linux

package pace

import (
	"time"

	"golang.org/x/sys/unix"
)

// preciseSleep sleeps in the kernel directly: a Go timer would round a
// short wait up to about a millisecond.
func preciseSleep(d time.Duration) {
	ts := unix.NsecToTimespec(int64(d))
	for {
		var rem unix.Timespec
		if err := unix.Nanosleep(&ts, &rem); err != unix.EINTR {
			return
		}
		ts = rem
	}
}

func prepareThread() error {
	return unix.Prctl(unix.PR_SET_TIMERSLACK, 1, 0, 0, 0)
}
