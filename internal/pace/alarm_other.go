//go:build !linux

package pace

import "sync/atomic"

// futexWait is Linux's: elsewhere the alarm's kernel stage is a Go timer.
func futexWait(w *atomic.Uint32, v uint32, d int64) bool { return false }

func futexWake(w *atomic.Uint32) {}
