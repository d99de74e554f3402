// Foreign peers on the command line: stamp://, echo:// and connect://.

package cli

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/volley-net/volley/internal/client"
	"github.com/volley-net/volley/internal/foreign"
	"github.com/volley-net/volley/internal/stamp"
	"github.com/volley-net/volley/internal/transport"
	"github.com/volley-net/volley/internal/tstamp"
)

// stampFlags are the flags of a stamp:// run; the key of its
// authenticated mode is --key's or --key-file's.
type stampFlags struct {
	stateful bool
	ssid     int
	// key is the HMAC key read from --key or --key-file (nil: the
	// unauthenticated mode), set by clientFlags.config.
	key []byte
	// size is the STAMP packet size: --size, or the mode's base length.
	size int
}

func (s *stampFlags) register(fl *pflag.FlagSet) {
	fl.BoolVar(&s.stateful, "stamp-stateful", false, "stamp://: the reflector is stateful (RFC 8762 section 4.2.1: it numbers its replies itself), which splits loss by direction")
	fl.IntVar(&s.ssid, "stamp-ssid", 0, "stamp://: the Session-Sender Identifier to send (RFC 8972), 0 to 65535")
}

// peerNames name the foreign peers in errors.
var peerNames = map[string]string{"stamp": "a STAMP reflector", "echo": "an echo service", "connect": "a TCP service"}

// checkForeign refuses, naming the flag, what the target's peer cannot
// do when it is not a volley reflector, and the stamp:// flags with any
// other target.
func (f clientFlags) checkForeign(cmd *cobra.Command, t transport.Target) error {
	changed := cmd.Flags().Changed
	for _, name := range []string{"stamp-stateful", "stamp-ssid"} {
		if changed(name) && t.Scheme != "stamp" {
			return usagef("--%s is for stamp:// targets", name)
		}
	}
	if changed("stamp-ssid") && (f.stamp.ssid < 0 || f.stamp.ssid > 65535) {
		return usagef("--stamp-ssid %d: want 0 to 65535", f.stamp.ssid)
	}
	if !t.Foreign() {
		return nil
	}
	peer := peerNames[t.Scheme]
	mode, _ := tstamp.ParseMode(f.timestamps)
	switch {
	case f.oneway:
		return usagef("--oneway is for volley reflectors: %s answers every probe and keeps no results to return", peer)
	case changed("hold"):
		return usagef("--hold is for volley reflectors: %s answers at once", peer)
	case changed("reply-size") && f.replySize != f.size:
		return usagef("--reply-size %d: %s answers with the request's size (%d bytes, --size)", int(f.replySize), peer, int(f.size))
	case changed("reconnect"):
		return usagef("--reconnect is for volley reflectors: %s has no session to lose and reopen (a run against it ends when it goes silent)", peer)
	case mode == tstamp.Kernel || mode == tstamp.Hardware:
		return usagef("--timestamps %s is for udp:// targets: %s sends no stamps of the kernel's, and the %s:// adapter reads the socket itself; --timestamps user or auto (the default)", f.timestamps, peer, t.Scheme)
	case (f.key != "" || f.keyFile != "") && t.Scheme != "stamp":
		return usagef("--key and --key-file are for volley reflectors and stamp:// (its authenticated mode): %s takes no key", peer)
	case t.Scheme == "connect" && (changed("size") || f.workload != ""):
		return usagef("--size and --workload are for probes that carry bytes: a connect:// probe is a TCP handshake, and sends none")
	}
	return nil
}

// foreignConfig fits cfg to a foreign target's peer: a workload with no
// reply sizes or holds, times from volley's clock (auto: no kernel
// stamps through the adapter), and for stamp:// the key taken for
// STAMP's authenticated mode, not volley's. (A --reply-size, the size
// if any, is dropped once checked: see config.)
func (f *clientFlags) foreignConfig(cfg *client.Config, t transport.Target, sizeGiven bool) error {
	if !t.Foreign() {
		return nil
	}
	for _, e := range cfg.Workload {
		if (e.ReplySize != 0 && e.ReplySize != e.Size) || e.Hold != 0 {
			return usagef("--workload %s: entry %s asks for a reply size or a hold: %s answers every probe at once, with its size", f.workload, e.Name, peerNames[t.Scheme])
		}
	}
	cfg.Stamps = tstamp.User
	if t.Scheme == "stamp" {
		f.stamp.key, cfg.Key = cfg.Key, nil
		return f.stampSize(cfg, sizeGiven)
	}
	return nil
}

// stampSize sets the STAMP packet size: --size when given (sizeGiven), at
// least the mode's base length, else the base (44 bytes, 112
// authenticated), as a plain RFC 8762 Session-Sender sends. The client's
// probes stay at least a volley header; the throughput counts the packets.
func (f *clientFlags) stampSize(cfg *client.Config, sizeGiven bool) error {
	base := stamp.BaseLength(f.stamp.key)
	f.stamp.size = base
	if sizeGiven && cfg.Workload == nil {
		if cfg.Size < base {
			return usagef("--size %d: a STAMP packet is at least %d bytes in this mode (RFC 8762)", cfg.Size, base)
		}
		f.stamp.size = cfg.Size
	}
	if cfg.Workload != nil {
		f.stamp.size = 0 // each probe's own size
		return nil
	}
	cfg.Size = max(f.stamp.size, client.MinSize)
	if f.stamp.size != cfg.Size {
		cfg.WireSize = f.stamp.size
	}
	return nil
}

// dialForeign opens a flow's connection to the foreign peer t: for
// stamp:// and echo:// the UDP socket raw (dialed as udp:// is, with the
// same options) wrapped in its adapter; for connect:// an adapter that
// connects at every probe, raw itself (it reads back the options its
// sockets take; hardware stamps and busy polling are refused for it
// before this).
func (f clientFlags) dialForeign(ctx context.Context, t transport.Target, o transport.DialOptions, cfg *client.Config) (conn, raw transport.Conn, err error) {
	if t.Scheme == "connect" {
		cc := foreign.ConnectConfig{Timeout: cfg.Timeout, Options: o.Socket}
		if cc.Local, err = bindAddr(o.Bind); err != nil {
			return nil, nil, err
		}
		if cc.Addr, err = connectAddr(ctx, t, o.Family, cc.Local.Addr()); err != nil {
			return nil, nil, err
		}
		c, err := foreign.NewConnect(cc)
		if err != nil {
			return nil, nil, err
		}
		return c, c, nil // its socket options are read back from it
	}
	raw, err = transport.DialWith(ctx, t, o)
	if err != nil {
		return nil, nil, err
	}
	if t.Scheme == "stamp" {
		sc := foreign.STAMPConfig{Key: f.stamp.key, SSID: uint16(f.stamp.ssid), Stateful: f.stamp.stateful, Size: f.stamp.size,
			Warmup: cfg.WarmupCount > 0 || cfg.WarmupDuration > 0}
		return foreign.NewSTAMP(raw, sc), raw, nil
	}
	return foreign.NewEcho(raw), raw, nil
}

// bindAddr reads --bind (ADDR or ADDR:PORT, an IPv6 address in brackets
// with a port) for connect://; "" is the zero AddrPort: any.
func bindAddr(bind string) (netip.AddrPort, error) {
	if bind == "" {
		return netip.AddrPort{}, nil
	}
	if ap, err := netip.ParseAddrPort(bind); err == nil {
		return ap, nil
	}
	a, err := netip.ParseAddr(strings.Trim(bind, "[]"))
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("--bind %s: want an IP address, or ADDR:PORT, for connect://", bind)
	}
	return netip.AddrPortFrom(a, 0), nil
}

// connectAddr returns the address a connect:// run dials: t's host, an IP
// address or a name resolved to one of the family -4 or -6 asked for
// (family "4" or "6"), or else of local's (--bind), when valid.
func connectAddr(ctx context.Context, t transport.Target, family string, local netip.Addr) (netip.AddrPort, error) {
	port := uint16(t.Port)
	if a, err := netip.ParseAddr(t.Host); err == nil {
		if a = a.Unmap(); family != "" && a.Is4() != (family == "4") {
			return netip.AddrPort{}, fmt.Errorf("%w: %s is not an IPv%s address (-%s)", transport.ErrBadTarget, t, family, family)
		}
		return netip.AddrPortFrom(a, port), nil
	}
	addrs, err := net.DefaultResolver.LookupNetIP(ctx, "ip"+family, t.Host)
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("%w: %s: %v", transport.ErrBadTarget, t, err)
	}
	for _, a := range addrs {
		if a = a.Unmap(); !local.IsValid() || a.Is4() == local.Unmap().Is4() {
			return netip.AddrPortFrom(a, port), nil
		}
	}
	return netip.AddrPort{}, fmt.Errorf("%w: %s: no address of %s's IP version (--bind)", transport.ErrBadTarget, t, local)
}
