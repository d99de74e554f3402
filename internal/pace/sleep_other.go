//go:build !linux

package pace

import (
	"errors"
	"time"
)

func preciseSleep(d time.Duration) { time.Sleep(d) }

func prepareThread() error { return errors.ErrUnsupported }
