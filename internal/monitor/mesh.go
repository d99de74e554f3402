package monitor

import (
	"cmp"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/netip"
	"slices"
	"strings"

	"github.com/volley-net/volley/internal/transport"
)

// ErrSelf says an agent could not find itself in its peer list.
var ErrSelf = errors.New("monitor: self not found among the peers")

// Mesh returns the targets an agent named self probes among peers
// (pingmesh-style). The peers are placed on a ring in the order of a hash
// of their names (stable, and spreading neighbours such as node-1 and
// node-2 apart). When the other peers are at most all, the agent probes
// every one of them. Otherwise it probes every peer of its own zone, and
// of the other peers the next k after itself on the ring: without zones,
// every agent probes k peers and is probed by k (with zones, a peer may
// be probed by more or fewer agents of other zones). zone is self's zone when
// its own entry has none. Self is never a target, and need not be among
// peers (it is then placed on the ring by its name). When any zone is
// set, every target carries the labels source_zone (self's zone) and
// target_zone (the peer's). The result is in ring order, whatever the
// order of peers.
func Mesh(self, zone string, peers []Peer, k, all int) []Target {
	zoned := zone != ""
	var others []Peer
	for _, p := range peers {
		zoned = zoned || p.Zone != ""
		if p.Name == self {
			zone = cmp.Or(p.Zone, zone)
			continue
		}
		others = append(others, p)
	}
	places := sortRing(others)
	var pick []Peer
	switch {
	case len(others) <= all:
		pick = others
	default:
		var rest []int // indexes of others outside self's zone
		for i, p := range others {
			if zone != "" && p.Zone == zone {
				continue
			}
			rest = append(rest, i)
		}
		// The first peer after self on the ring, then the next ones.
		start, _ := slices.BinarySearchFunc(rest, placeOf(self), func(i int, s ringPlace) int {
			return places[i].compare(s)
		})
		chosen := map[int]bool{}
		for j := 0; j < k && j < len(rest); j++ {
			chosen[rest[(start+j)%len(rest)]] = true
		}
		for i, p := range others {
			if chosen[i] || (zone != "" && p.Zone == zone) {
				pick = append(pick, p)
			}
		}
	}
	ts := make([]Target, 0, len(pick))
	for _, p := range pick {
		t := p.Target
		t.Source = "peers"
		t.Labels = maps.Clone(p.Labels)
		if zoned {
			if t.Labels == nil {
				t.Labels = map[string]string{}
			}
			t.Labels["source_zone"] = zone
			t.Labels["target_zone"] = p.Zone
		}
		ts = append(ts, t)
	}
	return ts
}

// ringHash is a peer's place on the ring.
func ringHash(name string) uint64 {
	h := sha256.Sum256([]byte(name))
	return binary.BigEndian.Uint64(h[:8])
}

// ringPlace is a name's place on the ring: by hash, then by name.
type ringPlace struct {
	hash uint64
	name string
}

// compare orders places on the ring.
func (a ringPlace) compare(b ringPlace) int {
	return cmp.Or(cmp.Compare(a.hash, b.hash), strings.Compare(a.name, b.name))
}

// placeOf returns name's place on the ring.
func placeOf(name string) ringPlace { return ringPlace{ringHash(name), name} }

// sortRing sorts ps in ring order and returns their places.
func sortRing(ps []Peer) []ringPlace {
	idx := make([]int, len(ps))
	places := make([]ringPlace, len(ps))
	for i, p := range ps {
		idx[i], places[i] = i, placeOf(p.Name)
	}
	slices.SortFunc(idx, func(a, b int) int { return places[a].compare(places[b]) })
	sorted, sortedPlaces := make([]Peer, len(ps)), make([]ringPlace, len(ps))
	for i, j := range idx {
		sorted[i], sortedPlaces[i] = ps[j], places[j]
	}
	copy(ps, sorted)
	return sortedPlaces
}

// peerAddr returns the IP address in p's URL, if it has one.
func peerAddr(p Peer) (netip.Addr, bool) {
	t, err := transport.ParseTarget(p.URL)
	if err != nil {
		return netip.Addr{}, false
	}
	a, err := netip.ParseAddr(t.Host)
	return a.Unmap(), err == nil
}

// FindSelf returns the name of the agent's own peer among peers: the
// peer named self, or self/ADDRESS when self's URL has a DNS name of one
// address; else, when self is an IP address, the peer at that
// address; and when self is empty, the peer whose address is one of
// local (this host's interface addresses: LocalAddrs). Two peers at one
// address (agents on one host, different ports) need self by name.
func FindSelf(self string, peers []Peer, local []netip.Addr) (string, error) {
	want := make([]netip.Addr, len(local))
	for i, a := range local {
		want[i] = a.Unmap()
	}
	if self != "" {
		var expanded []string // self's DNS name's peers: self/ADDRESS
		for _, p := range peers {
			if p.Name == self {
				return self, nil
			}
			if strings.HasPrefix(p.Name, self+"/") {
				expanded = append(expanded, p.Name)
			}
		}
		if len(expanded) == 1 {
			return expanded[0], nil
		}
		a, err := netip.ParseAddr(self)
		if err != nil {
			return "", fmt.Errorf("%w: no peer named %q", ErrSelf, self)
		}
		want = []netip.Addr{a.Unmap()}
	}
	var found []string
	for _, p := range peers {
		if a, ok := peerAddr(p); ok && slices.Contains(want, a) {
			found = append(found, p.Name)
		}
	}
	switch {
	case len(found) == 1:
		return found[0], nil
	case len(found) > 1:
		return "", fmt.Errorf("%w: peers %s are all at this host's addresses: name one with --self", ErrSelf, strings.Join(found, ", "))
	case self != "":
		return "", fmt.Errorf("%w: no peer named %q or at that address", ErrSelf, self)
	}
	return "", fmt.Errorf("%w: no peer at one of this host's addresses (%d of them): name it with --self", ErrSelf, len(local))
}

// LocalAddrs returns this host's interface addresses.
func LocalAddrs() ([]netip.Addr, error) {
	as, err := net.InterfaceAddrs()
	if err != nil {
		return nil, err
	}
	var out []netip.Addr
	for _, a := range as {
		if p, err := netip.ParsePrefix(a.String()); err == nil {
			out = append(out, p.Addr().Unmap())
		}
	}
	return out, nil
}

// AddressPeers names each peer by the address in its URL: the peers of a
// headless Service's DNS name (--peers-dns), expanded one per address,
// are named by their addresses, the same on every agent.
func AddressPeers(ps []Peer) []Peer {
	out := make([]Peer, len(ps))
	for i, p := range ps {
		if a, ok := peerAddr(p); ok {
			p.Name = a.String()
		}
		out[i] = p
	}
	return out
}
