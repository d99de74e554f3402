// Names of the transports below this package that callers need, given
// here so that the client, the reflector and the command line import
// transport alone and never one transport's package: which transport is
// behind a Conn or PacketConn stays transport's business.

package transport

import (
	"github.com/volley-net/volley/internal/transport/dbus"
	"github.com/volley-net/volley/internal/transport/stream"
	"github.com/volley-net/volley/internal/transport/udp"
)

// Message is one datagram of a batch.
type Message = udp.Message

// Path is what a received datagram's IP header said (see PathReader).
type Path = udp.Path

// TCPInfo is what the kernel says of a TCP connection.
type TCPInfo = stream.TCPInfo

// Handler answers a stream connection's messages on the connection's own
// goroutine; see stream.Listener.SetHandler.
type Handler = stream.Handler

// FuncHandler answers a D-Bus listener's messages, each on the goroutine
// of its caller; see dbus.Listener.SetHandler.
type FuncHandler = dbus.Handler

// Admission says how far a stream listener's Handler lets a peer in; see
// stream.Admission.
type Admission = stream.Admission

// The steps of a stream peer's admission.
const (
	AdmitNone    = stream.AdmitNone
	AdmitLarge   = stream.AdmitLarge
	AdmitSession = stream.AdmitSession
	AdmitTake    = stream.AdmitTake
)

// Taker is a stream listener's Handler that takes connections over
// (AdmitTake); see stream.Taker.
type Taker = stream.Taker

// StreamLimits bound what a stream listener's peers may take; see
// stream.Limits.
type StreamLimits = stream.Limits

// Refusal says why a stream listener refuses a peer; see stream.Refusal.
type Refusal = stream.Refusal

// The reasons a stream listener refuses a peer.
const (
	RefusedConns       = stream.RefusedConns
	RefusedSourceConns = stream.RefusedSourceConns
	RefusedMemory      = stream.RefusedMemory
)

// ErrNoMemory: a stream listener's memory budget cannot hold a reply.
var ErrNoMemory = stream.ErrNoMemory

// StreamMaxMessage is the largest message over TCP and Unix streams.
const StreamMaxMessage = stream.MaxMessage

// MaxBatch is the most datagrams a batch moves.
const MaxBatch = udp.MaxBatch
