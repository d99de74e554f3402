// Package foreign measures peers that are not volley reflectors: a STAMP
// Session-Reflector (stamp://, RFC 8762; TWAMP-light too), an echo service
// (echo://, RFC 862) and a TCP port whose handshakes are timed
// (connect://).
//
// Each adapter is a transport.Conn that speaks volley's messages on one
// side and the peer's protocol on the other: Write takes a volley probe
// and sends what the peer understands, Read returns the peer's answer as
// a volley reply to that probe (its Token, Seq and T1, and T2, T3 and
// Received where the peer's answers carry them). Peer says which of those
// the answers carry, and why the others cannot be told, so that the
// client (client.Foreign) records only what was measured and the report
// says what was not. A message that is no answer to a probe of the run
// comes back as one the client counts as an error.
//
// The adapters allocate nothing per probe. They open no session and keep
// no state beyond what their protocol needs: the client's accounting
// (loss, duplicates, reordering, timeouts) stays the client's.
package foreign

import "github.com/volley-net/volley/internal/transport"

// The datagram adapters pass the client's write deadline to their socket:
// every write to a peer is bounded.
var (
	_ transport.WriteDeadliner = (*STAMP)(nil)
	_ transport.WriteDeadliner = (*Echo)(nil)
)
