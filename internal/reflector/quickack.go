package reflector

import "github.com/volley-net/volley/internal/wire"

// WantsQuickAck reports whether msg is to be acknowledged at once with
// TCP_QUICKACK, set after reading it: not when it carries
// wire.FlagNoQuickAck (the client's --quickack=false, iperf 2's
// --bounceback-no-quickack), and not for a probe that asks no hold,
// whose reply leaves at once and carries the acknowledgement. TCP_QUICKACK
// there sent a bare ACK ahead of every reply: 4 µs more on a loopback
// round trip's p50 (32 against 28 µs), a packet more each way on a
// network, and nothing earlier a client could use. A held probe's
// request is acknowledged as it is read, as iperf 2's bounceback does
// every request. It reads only the header, and does not allocate; a
// message shorter than a header is acknowledged at once.
func WantsQuickAck(msg []byte) bool {
	if wire.FlagsOf(msg)&wire.FlagNoQuickAck != 0 {
		return false
	}
	hold, probe := wire.HoldOf(msg)
	return !probe || hold > 0
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
