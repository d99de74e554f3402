//go:build !linux

package testsock

import (
	"net"
	"testing"
)

// FullBacklog skips the test: only Linux refuses a full backlog at once.
func FullBacklog(t testing.TB, path string) net.Listener {
	t.Skip("skipping: a full backlog is refused at once only on Linux")
	return nil
}
