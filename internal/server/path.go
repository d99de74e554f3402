package server

import "github.com/volley-net/volley/internal/transport"

// enablePath has the UDP sockets read what each probe's IP header said
// (TTL or hop limit, traffic class), which the reflectors send back to
// the probes that ask (see wire.FlagPath). A socket that cannot is left
// as it is: its replies go without the path.
func (ss *Listeners) enablePath() {
	for _, pc := range ss.UDP {
		if p, ok := pc.(transport.PathReader); ok {
			_ = p.EnablePath() // best effort: the replies say when it is not on
		}
	}
}
