package reflector

import "github.com/volley-net/volley/internal/wire"

// WantsQuickAck reports whether msg is to be acknowledged at once with
// TCP_QUICKACK, set after reading it: not when it carries
// wire.FlagNoQuickAck (the client's --quickack=false, iperf 2's
// --bounceback-no-quickack), and not for a probe answered at once (no
// hold, not one-way), whose reply carries the acknowledgement.
// TCP_QUICKACK there sent a bare ACK ahead of every reply: 4 µs more on a
// loopback round trip's p50 (32 against 28 µs), a segment more from the
// reflector, and nothing earlier a client could use. Held and one-way
// probes, and every other message, are acknowledged as they are read, as
// iperf 2's bounceback does every request; a probe the reflector drops
// (rate limit, unknown session) is acknowledged by the kernel's delayed
// ACK, within 40 ms. It reads only the header, and does not allocate; a
// message shorter than a header is acknowledged at once.
func WantsQuickAck(msg []byte) bool {
	flags := wire.FlagsOf(msg)
	if flags&wire.FlagNoQuickAck != 0 {
		return false
	}
	hold, probe := wire.HoldOf(msg)
	return !probe || hold > 0 || flags&wire.FlagOneWay != 0
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
