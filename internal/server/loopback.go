package server

import (
	"context"
	"sync"

	"github.com/volley-net/volley/internal/reflector"
	"github.com/volley-net/volley/internal/transport"
	"github.com/volley-net/volley/internal/tstamp"
)

// Loopback starts the zero-set-up run's reflector (volley client with no
// target): on 127.0.0.1, inside this process, until stop is called; it
// outlives ctx, so that a signal's run still gets its replies and its
// final count. It returns the reflector's target.
func Loopback(ctx context.Context, stamps tstamp.Mode) (target string, stop func(), err error) {
	pc, err := transport.ListenUDP("127.0.0.1:0")
	if err != nil {
		return "", nil, err
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
		pc.Close()
		return "", nil, err
	}
	rctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	var wg sync.WaitGroup
	wg.Go(func() { refl.Serve(rctx, pc) })
	return "udp://" + pc.LocalAddr().String(), func() {
		cancel()
		wg.Wait()
		pc.Close()
	}, nil
}
