//go:build !linux

package stream

import (
	"sync/atomic"
	"time"
)

// busySupported says whether SetBusyPoll can make reads spin here.
const busySupported = false

// busyReader is Linux's.
type busyReader struct{}

func newBusyReader(any, *atomic.Int64, *atomic.Bool, time.Duration, func() int64) (*busyReader, error) {
	return nil, errBusyUnsupported
}

func (b *busyReader) read(p []byte) (int, error) { return 0, errBusyUnsupported }

func (b *busyReader) readAt() int64 { return 0 }

func (b *busyReader) setClock(func() int64) {}

func (b *busyReader) release() {}

func (b *busyReader) write(p []byte) (int, error) { return 0, errBusyUnsupported }
