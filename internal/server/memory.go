package server

import (
	"context"
	"runtime/debug"
	"sync"
	"time"

	"github.com/volley-net/volley/internal/quota"
)

// releaseMemory gives memory the budget no longer holds back to the
// system, once an attack or a burst of big requests has passed, until ctx
// is done or the returned stop is called: the Go runtime returns it only
// slowly by itself.
func releaseMemory(ctx context.Context, mem *quota.Memory) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(2 * time.Second)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			if now, peak := mem.Used(); peak-now >= 8<<20 {
				debug.FreeOSMemory()
			}
		}
	})
	return func() { cancel(); wg.Wait() }
}
