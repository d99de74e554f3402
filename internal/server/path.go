package server

import "github.com/volley-net/volley/internal/transport"

// enablePath has the UDP sockets read what each probe's IP header said
// (TTL or hop limit, traffic class), which the reflectors send back to
// the probes that ask (see wire.FlagPath), where it costs nothing
// measurable: on every socket but one that busy-polls without kernel
// stamps, whose spin would give up its lightest receive call (recvfrom)
// for recvmmsg, which brings the control messages. A socket that cannot
// is left as it is. Either way the replies go without the path, and the
// client says the up direction is not known.
func (ss *Listeners) enablePath() {
	for _, pc := range ss.UDP {
		if bp, ok := pc.(transport.BusyPolled); ok && bp.BusyPolling() && !ss.stamped {
			continue
		}
		if p, ok := pc.(transport.PathReader); ok {
			_ = p.EnablePath() // best effort: the replies say when it is not on
		}
	}
}
