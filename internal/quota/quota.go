// Package quota bounds what a reflector's peers may take of it: memory for
// buffers and held replies, and counts such as connections and sessions,
// each in all and per source, so that one source cannot take everything.
//
// A source is where a peer comes from as far as a reflector can tell: an
// IPv4 address, an IPv6 /64 (one host's share of a network), or for a Unix
// stream connection the user it runs as (see Source).
package quota

import (
	"net/netip"
	"sync"
)

// Source returns the source addr counts against: its IPv4 address, or its
// IPv6 /64. The stand-in addresses of Unix peers (fd76:6c00::/32 for
// stream connections, whose second 32 bits are the peer's user ID) group
// by user this way too.
func Source(addr netip.AddrPort) netip.Prefix {
	a := addr.Addr().Unmap()
	bits := 32
	if a.Is6() {
		bits = 64
	}
	p, _ := a.Prefix(bits) // cannot fail: bits fits either family
	return p
}

// Counter counts things per source, up to a total and a share per source.
// It is safe for concurrent use.
type Counter struct {
	max, perSource int
	mu             sync.Mutex
	n              int
	by             map[netip.Prefix]int
}

// NewCounter returns a Counter that allows max things in all (0: no
// limit) and perSource from one source (0: no limit).
func NewCounter(max, perSource int) *Counter {
	return &Counter{max: max, perSource: perSource, by: make(map[netip.Prefix]int)}
}

// Refusal says which limit refused a Take.
type Refusal int

// The limits a Take can meet.
const (
	OK        Refusal = iota
	Total             // the total is reached
	PerSource         // the source's share is reached
)

// Take counts one more thing from src, unless a limit is reached.
func (c *Counter) Take(src netip.Prefix) Refusal {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case c.max > 0 && c.n >= c.max:
		return Total
	case c.perSource > 0 && c.by[src] >= c.perSource:
		return PerSource
	}
	c.n++
	c.by[src]++
	return OK
}

// Give counts one thing from src less.
func (c *Counter) Give(src netip.Prefix) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n--
	if c.by[src]--; c.by[src] <= 0 {
		delete(c.by, src)
	}
}

// Of returns the things counted from src.
func (c *Counter) Of(src netip.Prefix) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.by[src]
}

// Memory is a budget of bytes, in all and per source. It is safe for
// concurrent use; a nil *Memory allows everything.
type Memory struct {
	limit, perSource int64
	mu               sync.Mutex
	used, peak       int64
	by               map[netip.Prefix]int64
}

// NewMemory returns a budget of limit bytes, of which one source may hold
// perSource.
func NewMemory(limit, perSource int64) *Memory {
	return &Memory{limit: limit, perSource: perSource, by: make(map[netip.Prefix]int64)}
}

// Take reserves n bytes for src, unless that would pass a limit.
func (m *Memory) Take(src netip.Prefix, n int) Refusal {
	if m == nil || n <= 0 {
		return OK
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	switch {
	case m.used+int64(n) > m.limit:
		return Total
	case m.perSource > 0 && m.by[src]+int64(n) > m.perSource:
		return PerSource
	}
	m.used += int64(n)
	m.peak = max(m.peak, m.used)
	m.by[src] += int64(n)
	return OK
}

// Give returns n bytes src reserved.
func (m *Memory) Give(src netip.Prefix, n int) {
	if m == nil || n <= 0 {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.used -= int64(n)
	if m.by[src] -= int64(n); m.by[src] <= 0 {
		delete(m.by, src)
	}
}

// Used returns the bytes reserved now, and the most reserved at once
// since the last call to Used.
func (m *Memory) Used() (now, peak int64) {
	if m == nil {
		return 0, 0
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	now, peak = m.used, m.peak
	m.peak = m.used
	return now, peak
}
