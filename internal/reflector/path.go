package reflector

import (
	"github.com/volley-net/volley/internal/transport"
	"github.com/volley-net/volley/internal/wire"
)

// pathOf makes the reply h to a probe that asks for its path (see
// wire.FlagPath) say what the probe's IP header said, p: its TTL or hop
// limit and its traffic class. Where the socket could not tell (p.OK
// false), the reply goes without the flag; a probe that did not ask gets
// none.
func pathOf(h *wire.Header, p transport.Path) {
	if h.Flags&wire.FlagPath == 0 {
		return
	}
	if !p.OK {
		h.Flags &^= wire.FlagPath
		return
	}
	h.TTL, h.TClass = p.TTL, p.TClass
}
