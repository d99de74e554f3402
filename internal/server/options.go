package server

import (
	"github.com/volley-net/volley/internal/transport"
	"github.com/volley-net/volley/internal/tstamp"
)

// BusyPoll says which sockets spin instead of sleeping in the kernel.
type BusyPoll struct {
	UDP, TCP, Unix bool
}

// SetBusyPoll makes the sockets b names spin (those that are open), and
// counts the threads that will: each UDP worker, and on TCP and on Unix
// the connection of the listener's only session, as ping-pong. Serve
// gives the Go runtime that many Ps.
func (ss *Listeners) SetBusyPoll(b BusyPoll) error {
	if b.UDP {
		for _, pc := range ss.UDP {
			if err := transport.SetBusyPoll(pc); err != nil {
				return configErrorf("--busy-poll: %v", err)
			}
		}
		ss.spinners += len(ss.UDP)
	}
	if b.TCP && ss.TCP != nil {
		if err := transport.SetBusyPoll(ss.TCP); err != nil {
			return configErrorf("--busy-poll: %v", err)
		}
		ss.spinners++ // the only session's connection, as ping-pong
	}
	if b.Unix && ss.Unix != nil {
		if err := transport.SetBusyPoll(ss.Unix); err != nil {
			return configErrorf("--busy-poll: %v", err)
		}
		ss.spinners++
	}
	return nil
}

// EnableStamps turns kernel (or hardware) stamps on for the UDP sockets,
// as mode asks, and returns the stamps in use: "user", "kernel" or
// "hardware". Serve has the UDP workers' reflectors use them; the stream
// sockets' are user-space times.
func (ss *Listeners) EnableStamps(mode tstamp.Mode) (string, error) {
	pcs := ss.UDP
	if ss.STAMP != nil {
		pcs = append(pcs[:len(pcs):len(pcs)], ss.STAMP)
	}
	socks := make([]tstamp.Enabler, len(pcs))
	for i, pc := range pcs {
		if sp, ok := pc.(transport.Stamper); ok {
			socks[i] = sp
		}
	}
	used, err := stampsUsed(mode, socks...)
	ss.stamped = used != "user" && err == nil
	return used, err
}

// stampsUsed turns on the stamps mode asks for on a server's UDP sockets
// and names those in use: under auto, a socket that refuses falls back to
// user-space times (tstamp.Use, the one place that decides it); under
// kernel or hardware, it is a usage error naming the flag.
func stampsUsed(mode tstamp.Mode, socks ...tstamp.Enabler) (string, error) {
	used, _, err := tstamp.Use(mode, socks...)
	if err != nil {
		return "", configErrorf("--timestamps %s: the UDP socket refused stamps (%v); --timestamps user goes without", mode, err)
	}
	return used.String(), nil
}
