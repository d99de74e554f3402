package clock

import (
	"crypto/sha256"
	"encoding/binary"
	"os"
	"strings"
	"sync"
)

// hostID is the kernel's identity: a hash of its boot ID, which the kernel
// draws at random each boot and which every container and namespace on it
// reads alike (0 when it cannot be read). The hash keeps the boot ID itself
// from the peers a reflector tells its identity to.
var hostID = sync.OnceValue(func() uint64 {
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return 0
	}
	id := strings.TrimSpace(string(b))
	if id == "" {
		return 0
	}
	sum := sha256.Sum256([]byte("volley clock identity 1\x00" + id))
	return binary.BigEndian.Uint64(sum[:]) | 1
})
