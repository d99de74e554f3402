package result

import "time"

// Path is what the IP headers of a run's probes and replies said on the
// way: the TTL (IPv4) or hop limit (IPv6), and the traffic class byte's
// DSCP and ECN. Up is what the reflector saw of the probes, Down what the
// client saw of the replies; Sent is what the client's socket set, as the
// kernel applied it. A change of either direction's marks during the run
// is an Event.
type Path struct {
	Sent PathMark      `json:"sent"`
	Up   PathDirection `json:"up"`
	Down PathDirection `json:"down"`
	// Events are the changes, in the order seen; at most MaxPathEvents
	// are kept, and EventsNotKept counts the rest.
	Events        []PathEvent `json:"events,omitempty"`
	EventsNotKept uint64      `json:"events_not_kept,omitempty"`
	// UpNote and DownNote say why a direction's marks are not known
	// (its Packets 0); empty when they are.
	UpNote   string `json:"up_note,omitempty"`
	DownNote string `json:"down_note,omitempty"`
}

// MaxPathEvents is the most path events a result keeps.
const MaxPathEvents = 32

// ECN code points (RFC 3168): the traffic class byte's lower two bits.
const (
	NotECT = 0
	ECT1   = 1
	ECT0   = 2
	CE     = 3
)

// PathMark is one IP header's marks: TTL or hop limit, DSCP (the
// traffic class byte's upper six bits) and ECN (its lower two: NotECT,
// ECT1, ECT0 or CE).
type PathMark struct {
	TTL  int `json:"ttl"`
	DSCP int `json:"dscp"`
	ECN  int `json:"ecn"`
}

// MarkOf splits a TTL and a traffic class byte into a PathMark.
func MarkOf(ttl, tclass uint8) PathMark {
	return PathMark{TTL: int(ttl), DSCP: int(tclass >> 2), ECN: int(tclass & 3)}
}

// PathDirection is what one direction's packets said.
type PathDirection struct {
	// Packets is how many told (0: the direction's marks are not known:
	// the reflector or the socket could not read them).
	Packets uint64 `json:"packets"`
	// First is the first packet's marks, Last the last's (a CE mark is
	// counted in CE, and Last keeps the ECN before it).
	First PathMark `json:"first"`
	Last  PathMark `json:"last"`
	// InitialTTL is the TTL the packets left with: up, the client's
	// socket's; down, inferred (InitialInferred) as the smallest of the
	// usual initial values 64, 128 and 255 not below First.TTL. Hops is
	// InitialTTL less First.TTL.
	InitialTTL      int  `json:"initial_ttl"`
	InitialInferred bool `json:"initial_inferred,omitempty"`
	Hops            int  `json:"hops"`
	// Changes counts the packets whose marks (TTL, DSCP, or ECN other
	// than a CE mark) differed from the packet's before; CE the packets
	// marked CE (congestion experienced).
	Changes uint64 `json:"changes"`
	CE      uint64 `json:"ce"`
}

// PathEvent is a change of one direction's marks during the run: at At
// since the measurement began, the probe Seq's packet (up: the probe;
// down: its reply) had To where the one before had From.
type PathEvent struct {
	At        time.Duration `json:"at_ns"`
	Seq       uint64        `json:"seq"`
	Direction string        `json:"direction"` // "up" or "down"
	From      PathMark      `json:"from"`
	To        PathMark      `json:"to"`
}

// InitialTTLs are the initial TTLs systems use, in increasing order:
// Linux and most Unix systems 64, Windows 128, network gear 255.
var InitialTTLs = [...]int{64, 128, 255}

// InferInitialTTL returns the smallest of InitialTTLs not below ttl.
func InferInitialTTL(ttl int) int {
	for _, t := range InitialTTLs {
		if ttl <= t {
			return t
		}
	}
	return 255
}
