package monitor

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"sync"
	"time"

	"github.com/volley-net/volley/internal/transport"
)

// LookupFunc returns the IPv4 and IPv6 addresses of a DNS name (its A
// and AAAA records).
type LookupFunc func(ctx context.Context, host string) ([]netip.Addr, error)

// DNS bounds: the most addresses one name expands to by default (the
// rest are dropped, sorted last; an agent's peer list from a headless
// Service takes MaxPeerAddresses), how long one lookup may take, and how
// many run at once.
const (
	MaxAddresses     = 64
	MaxPeerAddresses = 4096
	lookupTime       = 10 * time.Second
	lookupsAtOnce    = 8
)

// DefaultLookup looks host up with net.DefaultResolver.
func DefaultLookup(ctx context.Context, host string) ([]netip.Addr, error) {
	as, err := net.DefaultResolver.LookupNetIP(ctx, "ip", host)
	for i := range as {
		as[i] = as[i].Unmap()
	}
	return as, err
}

// dnsName returns the DNS name in url's host, or "" when it has none
// (an IP literal, a Unix socket, a bus, a URL that does not parse).
func dnsName(url string) string {
	t, err := transport.ParseTarget(url)
	if err != nil || t.Path != "" || t.Scheme == "dbus" || t.Host == "" {
		return ""
	}
	if _, err := netip.ParseAddr(t.Host); err == nil {
		return ""
	}
	return t.Host
}

// dnsCache keeps each name's addresses of its last good lookup. A failed
// lookup keeps them (none, when no lookup ever worked): never fatal.
type dnsCache struct {
	lookup LookupFunc
	health Health
	log    func(format string, args ...any)
	most   int // addresses kept per name

	mu     sync.Mutex
	addrs  map[string][]netip.Addr // sorted, at most most
	failed map[string]string       // the error last logged, per name
	capped map[string]bool         // names whose addresses were capped (logged once)
}

// newDNSCache returns a cache that looks names up with lookup
// (DefaultLookup when nil) and keeps most addresses of each
// (MaxAddresses when 0).
func newDNSCache(lookup LookupFunc, most int, h Health, log func(string, ...any)) *dnsCache {
	if lookup == nil {
		lookup = DefaultLookup
	}
	if most <= 0 {
		most = MaxAddresses
	}
	return &dnsCache{lookup: lookup, most: most, health: h, log: log,
		addrs: map[string][]netip.Addr{}, failed: map[string]string{}, capped: map[string]bool{}}
}

// names returns the DNS names of ps' URLs, each once, in order.
func dnsNames(ps []Peer) []string {
	var hs []string
	for _, p := range ps {
		if h := dnsName(p.URL); h != "" && !slices.Contains(hs, h) {
			hs = append(hs, h)
		}
	}
	return hs
}

// keep forgets the names not in hosts, so that the cache holds only the
// current set's.
func (c *dnsCache) keep(hosts []string) {
	var gone []string
	defer func() {
		// Said once the lock is let go.
		for _, h := range gone {
			if c.health != nil {
				c.health.Forget("dns:" + h)
			}
		}
	}()
	c.mu.Lock()
	defer c.mu.Unlock()
	want := make(map[string]bool, len(hosts))
	for _, h := range hosts {
		want[h] = true
	}
	for h := range c.addrs {
		if !want[h] {
			delete(c.addrs, h)
			gone = append(gone, h)
		}
	}
	for h := range c.failed {
		if !want[h] {
			delete(c.failed, h)
			if !slices.Contains(gone, h) {
				gone = append(gone, h)
			}
		}
	}
	for h := range c.capped {
		if !want[h] {
			delete(c.capped, h)
		}
	}
}

// known reports whether host was looked up already (it may have failed).
func (c *dnsCache) known(host string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.addrs[host]
	_, bad := c.failed[host]
	return ok || bad
}

// resolve looks each of hosts up, a few at once, and reports whether any
// name's addresses changed.
func (c *dnsCache) resolve(ctx context.Context, hosts []string) bool {
	var (
		wg      sync.WaitGroup
		sem     = make(chan struct{}, lookupsAtOnce)
		mu      sync.Mutex
		changed bool
	)
	for _, h := range hosts {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			if c.resolveOne(ctx, h) {
				mu.Lock()
				changed = true
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return changed
}

// resolveOne looks host up and reports whether its addresses changed.
func (c *dnsCache) resolveOne(ctx context.Context, host string) bool {
	ctx, cancel := context.WithTimeout(ctx, lookupTime)
	as, err := c.lookup(ctx, host)
	cancel()
	if err == nil && len(as) == 0 {
		err = fmt.Errorf("lookup %s: no addresses", host)
	}
	if c.health != nil {
		c.health.Reload("dns:"+host, err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if err != nil {
		if c.failed[host] != err.Error() && c.log != nil {
			c.log("dns %s: %v (keeping its %d addresses of the last good lookup)", host, err, len(c.addrs[host]))
		}
		c.failed[host] = err.Error()
		return false
	}
	if _, ok := c.failed[host]; ok {
		delete(c.failed, host)
		if c.log != nil {
			c.log("dns %s: resolves again", host)
		}
	}
	as = slices.Clone(as)
	for i := range as {
		as[i] = as[i].Unmap()
	}
	slices.SortFunc(as, netip.Addr.Compare)
	as = slices.Compact(as)
	if len(as) > c.most {
		if !c.capped[host] && c.log != nil {
			c.log("dns %s: %d addresses, measuring the first %d", host, len(as), c.most)
		}
		c.capped[host] = true
		as = as[:c.most]
	}
	old, ok := c.addrs[host]
	c.addrs[host] = as
	return !ok || !slices.Equal(old, as)
}

// expand returns ps with each peer whose URL's host is a DNS name
// replaced by one peer per address of the name's last good lookup, named
// NAME/ADDRESS, its URL's host the address.
func (c *dnsCache) expand(ps []Peer) []Peer {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]Peer, 0, len(ps))
	for _, p := range ps {
		h := dnsName(p.URL)
		if h == "" {
			out = append(out, p)
			continue
		}
		t, _ := transport.ParseTarget(p.URL) // parsed by dnsName
		for _, a := range c.addrs[h] {
			q := p
			t.Host = a.String()
			q.URL = t.String()
			q.Name = p.Name + "/" + a.String()
			if q.Source != "peers" {
				q.Source = "dns"
			}
			out = append(out, q)
		}
	}
	return out
}
