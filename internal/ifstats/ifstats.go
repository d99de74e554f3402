// Package ifstats reads a network interface's packet and byte counters, as
// pingpong's bouncer shows them beside its own.
package ifstats

// Counters are an interface's totals since it came up.
type Counters struct {
	RXPackets, TXPackets uint64
	RXBytes, TXBytes     uint64
	RXDropped            uint64
}

// Sub returns the counters accumulated between o and c.
func (c Counters) Sub(o Counters) Counters {
	return Counters{
		RXPackets: c.RXPackets - o.RXPackets, TXPackets: c.TXPackets - o.TXPackets,
		RXBytes: c.RXBytes - o.RXBytes, TXBytes: c.TXBytes - o.TXBytes,
		RXDropped: c.RXDropped - o.RXDropped,
	}
}

// Read returns the counters of the interface named name.
func Read(name string) (Counters, error) { return read(name) }
