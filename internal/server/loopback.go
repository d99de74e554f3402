package server

import (
	"context"
	"sync"

	"github.com/volley-net/volley/internal/load"
	"github.com/volley-net/volley/internal/reflector"
	"github.com/volley-net/volley/internal/sockopt"
	"github.com/volley-net/volley/internal/transport"
	"github.com/volley-net/volley/internal/tstamp"
)

// LoopbackOption changes what Loopback starts.
type LoopbackOption func(*loopbackConfig)

type loopbackConfig struct {
	load bool
}

// LoopbackLoad makes the loopback reflector also listen on TCP, on its UDP
// port, and serve load streams there (load.DefaultMaxRate, the load
// package's limits): the bulk streams of volley client --load with no
// target dial tcp to the target's host and port.
func LoopbackLoad() LoopbackOption { return func(c *loopbackConfig) { c.load = true } }

// Loopback starts the zero-set-up run's reflector (volley client with no
// target): on 127.0.0.1, inside this process, until stop is called; it
// outlives ctx, so that a signal's run still gets its replies and its
// final count. It returns the reflector's target (udp://, also on TCP at
// the same port with LoopbackLoad).
func Loopback(ctx context.Context, stamps tstamp.Mode, opts ...LoopbackOption) (target string, stop func(), err error) {
	var lc loopbackConfig
	for _, o := range opts {
		o(&lc)
	}
	openUDP := func(addr string) ([]transport.PacketConn, error) {
		pc, err := transport.ListenUDP(addr)
		if err != nil {
			return nil, err
		}
		return []transport.PacketConn{pc}, nil
	}
	var openTCP func(addr string) (transport.PacketConn, error)
	if lc.load {
		openTCP = func(addr string) (transport.PacketConn, error) {
			return transport.ListenStreamWith("tcp", addr, transport.ListenOptions{Socket: sockopt.Options{TOS: -1}})
		}
	}
	pcs, tcp, err := bindPort("127.0.0.1:0", openUDP, openTCP)
	if err != nil {
		return "", nil, err
	}
	pc := pcs[0]
	closeAll := func() {
		pc.Close()
		if tcp != nil {
			tcp.Close()
		}
	}
	// It takes kernel stamps as the client does (where the socket has
	// them, whatever mode the client asked for), so that a first run
	// shows what they measure.
	used := tstamp.User
	if stamps != tstamp.User {
		sp, _ := pc.(transport.Stamper)
		used, _, _ = tstamp.Use(tstamp.Auto, sp)
	}
	if p, ok := pc.(transport.PathReader); ok {
		_ = p.EnablePath() // best effort, as a server's (see enablePath)
	}
	refl, err := reflector.New(reflector.Config{ReportInterval: -1, Stamps: used != tstamp.User})
	if err != nil {
		closeAll()
		return "", nil, err
	}
	var streams *reflector.Reflector
	if tcp != nil {
		streams, err = reflector.New(reflector.Config{ReportInterval: -1, MaxMessage: transport.MaxMessage(tcp),
			Load: load.NewServer(load.ServerConfig{MaxRate: load.DefaultMaxRate})})
		if err != nil {
			closeAll()
			return "", nil, err
		}
	}
	rctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	var wg sync.WaitGroup
	wg.Go(func() { refl.Serve(rctx, pc) })
	if streams != nil {
		wg.Go(func() { streams.Serve(rctx, tcp) })
	}
	return "udp://" + pc.LocalAddr().String(), func() {
		cancel()
		wg.Wait()
		closeAll()
	}, nil
}
