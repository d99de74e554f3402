//go:build linux

package ifstats

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

func read(name string) (Counters, error) {
	if name == "" || strings.ContainsAny(name, "/\x00") || name == "." || name == ".." {
		return Counters{}, fmt.Errorf("bad interface name %q", name)
	}
	dir := filepath.Join("/sys/class/net", name, "statistics")
	var c Counters
	for _, f := range []struct {
		file string
		v    *uint64
	}{
		{"rx_packets", &c.RXPackets}, {"tx_packets", &c.TXPackets},
		{"rx_bytes", &c.RXBytes}, {"tx_bytes", &c.TXBytes}, {"rx_dropped", &c.RXDropped},
	} {
		b, err := os.ReadFile(filepath.Join(dir, f.file))
		if err != nil {
			return Counters{}, fmt.Errorf("interface %s: %w", name, err)
		}
		if *f.v, err = strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64); err != nil {
			return Counters{}, fmt.Errorf("interface %s: %s: %w", name, f.file, err)
		}
	}
	return c, nil
}
