package client

import (
	"testing"
	"time"

	"github.com/volley-net/volley/internal/result"
)

// TestKeepReconnect: a run that reconnects without end keeps the latest
// MaxReconnectsKept, in order, in memory that does not grow.
func TestKeepReconnect(t *testing.T) {
	var list []result.Reconnect
	const n = 3*MaxReconnectsKept + 7
	for i := range n {
		list = keepReconnect(list, result.Reconnect{At: time.Duration(i)})
		if want := min(i+1, MaxReconnectsKept); len(list) != want {
			t.Fatalf("after %d: %d kept, want %d", i+1, len(list), want)
		}
	}
	for i, rc := range list {
		if want := time.Duration(n - MaxReconnectsKept + i); rc.At != want {
			t.Fatalf("kept[%d].At = %d, want %d", i, rc.At, want)
		}
	}
	if c := cap(list); c > 2*MaxReconnectsKept {
		t.Errorf("capacity %d, want it bounded near %d", c, MaxReconnectsKept)
	}
}
