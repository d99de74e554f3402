//go:build !linux

package clock

// hostID returns 0: the kernel's identity is known on Linux only, so
// elsewhere a System clock has no identity and the offset is estimated.
func hostID() uint64 { return 0 }
