package reflector

import "net/netip"

// The reflector's limits that other listeners of a server share: the rate
// bucket and the allow-list (the STAMP listener keeps them as this
// reflector does).

// Bucket is a token bucket of packets, the one each session's --max-rate
// and the reflector's --max-total-rate are kept with: it holds a tenth of
// a second's worth of packets, at least 10. The zero value is full.
type Bucket struct{ b bucket }

// Take refills b at rate packets/s up to now (ns) and takes a packet's
// token if there is one: false means the packet is over the rate.
func (b *Bucket) Take(rate float64, now int64) bool { return b.b.take(rate, now) }

// Allowed reports whether addr is inside one of the networks of allow
// (--allow); an empty allow lets every address in.
func Allowed(allow []netip.Prefix, addr netip.AddrPort) bool {
	if len(allow) == 0 {
		return true
	}
	a := addr.Addr().Unmap()
	for _, p := range allow {
		if p.Contains(a) {
			return true
		}
	}
	return false
}
