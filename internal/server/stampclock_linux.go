package server

import (
	"syscall"

	"github.com/volley-net/volley/internal/stamp"
)

// The kernel's NTP state (adjtimex(2)): TIME_ERROR, and the status bit
// STA_UNSYNC.
const (
	timeError = 5
	staUnsync = 0x0040
	usToNanos = 1000
)

// clockError returns the error estimate of this host's clock that a STAMP
// reply carries (RFC 8762 §4.2.1, RFC 4656 §4.1.2), as the kernel tells
// it (adjtimex, reading only): synchronized unless the kernel says it is
// not, with the kernel's maximum error. It is the smallest estimate, not
// synchronized, when the kernel does not say.
func clockError() stamp.ErrorEstimate {
	var tx syscall.Timex
	state, err := syscall.Adjtimex(&tx)
	if err != nil {
		return stamp.NewErrorEstimate(false, 0)
	}
	synced := state != timeError && tx.Status&staUnsync == 0
	return stamp.NewErrorEstimate(synced, int64(tx.Maxerror)*usToNanos)
}
