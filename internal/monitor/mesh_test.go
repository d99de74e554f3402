package monitor

import (
	"fmt"
	"math/rand/v2"
	"net/netip"
	"reflect"
	"slices"
	"testing"
)

// meshPeers returns n peers named node-0 to node-(n-1), at 10.0.x.y.
func meshPeers(n int) []Peer {
	ps := make([]Peer, n)
	for i := range ps {
		ps[i] = Peer{Target: Target{Name: fmt.Sprintf("node-%d", i), URL: fmt.Sprintf("udp://10.0.%d.%d:7766", i/250, i%250+1)}}
	}
	return ps
}

func TestMeshEveryAgentProbesAndIsProbedK(t *testing.T) {
	for _, n := range []int{2, 3, 5, 10, 33, 100, 257} {
		for _, k := range []int{1, 2, 3, 8} {
			if k >= n {
				continue
			}
			ps := meshPeers(n)
			probed := map[string]int{}
			for _, self := range ps {
				ts := Mesh(self.Name, "", ps, k, 0)
				if len(ts) != k {
					t.Fatalf("n=%d k=%d: Mesh(%s) = %d targets, want %d", n, k, self.Name, len(ts), k)
				}
				for _, tg := range ts {
					if tg.Name == self.Name {
						t.Fatalf("n=%d k=%d: Mesh(%s) probes itself", n, k, self.Name)
					}
					if tg.Source != "peers" || tg.Labels != nil {
						t.Fatalf("n=%d k=%d: Mesh(%s) target %+v, want source peers and no labels (no zones)", n, k, self.Name, tg)
					}
					probed[tg.Name]++
				}
			}
			for _, p := range ps {
				if probed[p.Name] != k {
					t.Errorf("n=%d k=%d: %s probed %d times, want %d", n, k, p.Name, probed[p.Name], k)
				}
			}
		}
	}
}

func TestMeshAll(t *testing.T) {
	ps := meshPeers(10)
	for _, all := range []int{9, 32} {
		ts := Mesh("node-3", "", ps, 2, all)
		if len(ts) != 9 || slices.ContainsFunc(ts, func(t Target) bool { return t.Name == "node-3" }) {
			t.Errorf("all=%d: Mesh = %d targets, want the 9 others", all, len(ts))
		}
	}
	if ts := Mesh("node-3", "", ps, 2, 8); len(ts) != 2 {
		t.Errorf("all=8 of 9 others: Mesh = %d targets, want k=2", len(ts))
	}
	if ts := Mesh("node-3", "", ps, 50, 0); len(ts) != 9 {
		t.Errorf("k above the others: Mesh = %d targets, want the 9 others", len(ts))
	}
}

func TestMeshDeterministic(t *testing.T) {
	ps := meshPeers(40)
	want := Mesh("node-7", "", ps, 5, 0)
	shuffled := slices.Clone(ps)
	r := rand.New(rand.NewPCG(1, 2))
	for range 5 {
		r.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
		if got := Mesh("node-7", "", shuffled, 5, 0); !reflect.DeepEqual(got, want) {
			t.Fatalf("Mesh(shuffled) = %v, want %v (the same, whatever the order)", targetNames(got), targetNames(want))
		}
	}
	if slices.Equal(targetNames(want), []string{"node-8", "node-9", "node-10", "node-11", "node-12"}) {
		t.Errorf("Mesh = %v: the next by name, want the ring's hashed order", targetNames(want))
	}
	// An outsider (not in the list) still gets k peers.
	if got := Mesh("node-999", "", ps, 5, 0); len(got) != 5 {
		t.Errorf("Mesh(outsider) = %d targets, want 5", len(got))
	}
}

func targetNames(ts []Target) []string {
	var s []string
	for _, t := range ts {
		s = append(s, t.Name)
	}
	return s
}

func TestMeshZones(t *testing.T) {
	ps := meshPeers(60)
	zones := []string{"a", "b", "c"}
	for i := range ps {
		ps[i].Zone = zones[i%3]
	}
	const k = 4
	for _, self := range ps {
		ts := Mesh(self.Name, "", ps, k, 10)
		var own, other int
		for _, tg := range ts {
			if tg.Name == self.Name {
				t.Fatalf("Mesh(%s) probes itself", self.Name)
			}
			if tg.Labels["source_zone"] != self.Zone {
				t.Fatalf("Mesh(%s): source_zone %q, want %q", self.Name, tg.Labels["source_zone"], self.Zone)
			}
			if tg.Labels["target_zone"] == self.Zone {
				own++
			} else {
				other++
			}
		}
		if own != 19 || other != k {
			t.Errorf("Mesh(%s) = %d of its zone and %d of others, want 19 and %d", self.Name, own, other, k)
		}
	}
	// Self's zone from the argument when its entry has none.
	ps[0].Zone = ""
	ts := Mesh(ps[0].Name, "b", ps, k, 10)
	if n := len(ts); n != 20+k {
		t.Errorf("Mesh(zone b from the flag) = %d targets, want the 20 of zone b and %d", n, k)
	}
}

func TestMeshKeepsLabels(t *testing.T) {
	ps := meshPeers(3)
	ps[1].Labels = map[string]string{"rack": "r1"}
	ps[1].Zone = "z1"
	ts := Mesh("node-0", "z0", ps, 1, 5)
	for _, tg := range ts {
		if tg.Name == "node-1" && !reflect.DeepEqual(tg.Labels, map[string]string{"rack": "r1", "source_zone": "z0", "target_zone": "z1"}) {
			t.Errorf("Mesh target labels %v, want rack, source_zone z0, target_zone z1", tg.Labels)
		}
		if tg.Name == "node-2" && !reflect.DeepEqual(tg.Labels, map[string]string{"source_zone": "z0", "target_zone": ""}) {
			t.Errorf("Mesh target labels %v, want source_zone z0 and an empty target_zone", tg.Labels)
		}
	}
	if ps[1].Labels["source_zone"] != "" {
		t.Errorf("Mesh changed its input's labels: %v", ps[1].Labels)
	}
}

func TestFindSelf(t *testing.T) {
	ps := meshPeers(4)
	a := func(s string) netip.Addr { return netip.MustParseAddr(s) }
	for _, c := range []struct {
		self  string
		local []netip.Addr
		want  string
	}{
		{"node-2", nil, "node-2"},
		{"10.0.0.4", nil, "node-3"},
		{"", []netip.Addr{a("127.0.0.1"), a("10.0.0.2"), a("::1")}, "node-1"},
		{"", []netip.Addr{a("::ffff:10.0.0.1")}, "node-0"},
	} {
		if got, err := FindSelf(c.self, ps, c.local); got != c.want || err != nil {
			t.Errorf("FindSelf(%q, %v) = %q, %v; want %q", c.self, c.local, got, err, c.want)
		}
	}
	two := append(meshPeers(2), Peer{Target: Target{Name: "again", URL: "udp://10.0.0.1:7000"}})
	for _, c := range []struct {
		self  string
		peers []Peer
		local []netip.Addr
	}{
		{"node-9", ps, nil},
		{"10.9.9.9", ps, nil},
		{"", ps, []netip.Addr{a("127.0.0.1")}},
		{"", two, []netip.Addr{a("10.0.0.1")}},
	} {
		if got, err := FindSelf(c.self, c.peers, c.local); err == nil {
			t.Errorf("FindSelf(%q, %v) = %q, want an error", c.self, c.local, got)
		}
	}
	dns := []Peer{{Target: Target{Name: "node-a/10.0.0.1", URL: "udp://10.0.0.1"}}, {Target: Target{Name: "node-b/10.0.0.2", URL: "udp://10.0.0.2"}}}
	if got, err := FindSelf("node-b", dns, nil); got != "node-b/10.0.0.2" || err != nil {
		t.Errorf("FindSelf(node-b) = %q, %v; want its one address's peer node-b/10.0.0.2", got, err)
	}
	if got, err := FindSelf("again", two, nil); got != "again" || err != nil {
		t.Errorf("FindSelf(again) = %q, %v; want it by name", got, err)
	}
}

func TestAddressPeers(t *testing.T) {
	ps := AddressPeers([]Peer{
		{Target: Target{Name: "svc/10.1.2.3", URL: "udp://10.1.2.3:7766"}},
		{Target: Target{Name: "svc/fd00::1", URL: "udp://[fd00::1]:7766"}},
	})
	if got := []string{ps[0].Name, ps[1].Name}; !slices.Equal(got, []string{"10.1.2.3", "fd00::1"}) {
		t.Errorf("AddressPeers names = %v, want the addresses", got)
	}
}

func TestLocalAddrs(t *testing.T) {
	as, err := LocalAddrs()
	if err != nil {
		t.Skipf("skipping: no interface addresses: %v", err)
	}
	if !slices.ContainsFunc(as, netip.Addr.IsLoopback) {
		t.Errorf("LocalAddrs() = %v, want a loopback address among them", as)
	}
}
