package reflector

import "github.com/volley-net/volley/internal/wire"

// WantsQuickAck reports whether the client that sent msg wants it
// acknowledged at once: a TCP reflector sets TCP_QUICKACK after reading a
// message unless the message carries wire.FlagNoQuickAck (the client's
// --quickack=false, iperf 2's --bounceback-no-quickack). It reads only
// the flags, and does not allocate; a message shorter than a header has
// none, and is acknowledged at once.
func WantsQuickAck(msg []byte) bool {
	return wire.FlagsOf(msg)&wire.FlagNoQuickAck == 0
}

// QuickAck returns what a TCP listener asks of each message it reads
// (transport.ListenOptions.QuickAck): WantsQuickAck when on (the server's
// --quickack), else nil, which leaves the kernel's delayed ACKs on for
// every client.
func QuickAck(on bool) func(msg []byte) bool {
	if !on {
		return nil
	}
	return WantsQuickAck
}
