package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"

	"github.com/spf13/cobra"

	"github.com/volley-net/volley/internal/client"
	"github.com/volley-net/volley/internal/result"
	"github.com/volley-net/volley/internal/server"
	"github.com/volley-net/volley/internal/sockopt"
	"github.com/volley-net/volley/internal/transport"
	"github.com/volley-net/volley/internal/tstamp"
)

// runClient runs volley client: the flags to a configuration, the
// connections (to the in-process reflector with no target), the writers,
// the run, and its report.
func runClient(ctx context.Context, cmd *cobra.Command, target string, f clientFlags, stdout, stderr io.Writer) error {
	t := transport.Target{Scheme: "udp"} // the in-process reflector's
	if target != "" {
		var err error
		if t, err = transport.ParseTarget(target); err != nil {
			return usageError{err}
		}
	}
	cfg, err := f.config(cmd, t)
	if err != nil {
		return err
	}
	// Scheduling is checked before any socket is opened, so that a bad
	// --cpu is a usage error and not hidden behind a failed dial.
	thread, err := f.sched.plan(cmd, stderr)
	if err != nil {
		return err
	}
	if thread != nil {
		cfg.Thread = func(flow int, role string) error { return thread(flow, fmt.Sprintf("flow %d %s", flow, role)) }
	}
	inProcess := target == ""
	if inProcess {
		stop, err := loopback(ctx, &t, cfg.Stamps, f.loadF.on(), f.quiet, stderr)
		if err != nil {
			return err
		}
		defer stop()
	}
	conns, err := f.dial(ctx, cmd, t, &cfg)
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	if err != nil {
		return err
	}
	// On a terminal, the progress line; the writes to that terminal go
	// through it.
	prog := newProgress(f, stdout, stderr, ttyOf)
	if prog != nil {
		defer prog.stop()
		stdout, stderr = prog.writers(stdout, stderr, ttyOf)
	}
	// The report goes to stdout, unless the probe log takes it (--log -):
	// then to stderr, so that the CSV pipes alone.
	out := stdout
	if f.log == "-" {
		out = stderr
	}
	rep := &clientReport{format: f.format, quiet: f.quiet, out: out, target: t, inProcess: inProcess}
	var h client.Funcs
	rep.hook(&cfg, &h)
	closeLog, err := openLog(&cfg, f.log, stdout)
	if err != nil {
		return err
	}
	defer closeLog()
	reconnectNotes(&h, stderr, t, f.reconnect)
	var plot *plotRun
	if f.plot != "" {
		plot, rep.noIntervals = hookPlot(&cfg, &h)
	}
	if prog != nil && prog.hook(ctx, &cfg, &h) {
		rep.noIntervals = true
	}
	cfg.Handler = h
	var res *result.Result
	var runErr error
	if f.loadF.on() {
		res, runErr = f.runLoad(ctx, t, cfg, conns[0])
	} else {
		res, runErr = client.RunFlows(ctx, cfg, conns)
	}
	err = rep.finish(ctx, &cfg, f.log, res, runErr)
	if plot != nil && res != nil {
		err = errors.Join(err, plot.draw(f.plot, res))
	}
	return err
}

// loopback starts the zero-set-up run's reflector, on loopback inside
// this process (serving bulk streams too, withLoad), and makes t its
// address.
func loopback(ctx context.Context, t *transport.Target, stamps tstamp.Mode, withLoad, quiet bool, stderr io.Writer) (stop func(), err error) {
	var opts []server.LoopbackOption
	if withLoad {
		opts = append(opts, server.LoopbackLoad()) // --load: its TCP listener serves the bulk streams
	}
	addr, stop, err := server.Loopback(ctx, stamps, opts...)
	if err != nil {
		return nil, err
	}
	if !quiet {
		fmt.Fprintf(stderr, "volley: no target given: measuring against an in-process reflector at %s\n", addr)
	}
	if *t, err = transport.ParseTarget(addr); err != nil {
		stop()
		return nil, err
	}
	return stop, nil
}

// dial opens the flows' connections to t, each with the socket options,
// the hardware stamping and the busy polling the flags ask for, and puts
// the socket options granted in cfg. The connections opened are returned
// also with an error, for the caller to close.
func (f clientFlags) dial(ctx context.Context, cmd *cobra.Command, t transport.Target, cfg *client.Config) ([]transport.Conn, error) {
	dopts, asked, err := f.dialOptions(cmd, t)
	if err != nil {
		return nil, err
	}
	conns := make([]transport.Conn, 0, f.parallel)
	var first transport.Conn // the first flow's socket, for the options granted
	for range f.parallel {
		// Every flow its own socket, and with a foreign peer its own
		// adapter over it (raw: the socket, whose options are read
		// back; connect://'s adapter stands for its sockets).
		conn, raw, err := f.dialFlow(ctx, t, dopts, cfg)
		if err != nil {
			return conns, usageError{err}
		}
		conns = append(conns, conn)
		if first == nil {
			first = raw
		}
		if cfg.Stamps == tstamp.Hardware {
			if err := prepareHardware(raw, f.iface); err != nil {
				return conns, usageError{err}
			}
		}
		if f.busyPoll {
			if err := transport.SetBusyPoll(raw); err != nil {
				return conns, usageError{fmt.Errorf("--busy-poll: %w", err)}
			}
		}
	}
	if f.busyPoll {
		// One P per spinning thread, and one per open-loop sender: an
		// idle P makes the runtime spin threads of its own, which steal
		// the spinners' cores (p90 went from 11µs to 55µs with one idle P).
		procs := f.parallel
		if cfg.OpenLoop() {
			procs *= 2
		}
		runtime.GOMAXPROCS(procs)
	}
	if g, err := granted(first); err == nil {
		cfg.Socket = &result.Socket{SendBuffer: g.SendBuffer, RecvBuffer: g.RecvBuffer, TOS: g.TOS, TTL: g.TTL, DF: g.DF,
			Congestion: g.Congestion, NoDelay: g.NoDelay, Interface: g.Interface, Bind: dopts.Bind, Asked: asked}
	}
	return conns, nil
}

// dialFlow opens one flow's connection to t: conn the one to measure
// through, raw its socket (nil where there is none: connect://, whose
// probes are connections of their own).
func (f clientFlags) dialFlow(ctx context.Context, t transport.Target, o transport.DialOptions, cfg *client.Config) (conn, raw transport.Conn, err error) {
	if t.Foreign() {
		return f.dialForeign(ctx, t, o, cfg)
	}
	conn, err = transport.DialWith(ctx, t, o)
	return conn, conn, err
}

// granted returns the socket options the kernel granted conn, or an
// error where there is no socket to ask (nil, or not an IP socket).
func granted(conn transport.Conn) (sockopt.Granted, error) {
	if conn == nil {
		return sockopt.Granted{}, errors.ErrUnsupported
	}
	return transport.Granted(conn)
}

// prepareHardware turns on hardware stamping on the interface conn sends
// through (iface, or the one holding its local address), or says why it
// cannot.
func prepareHardware(conn transport.Conn, iface string) error {
	name, err := tstamp.PrepareHardwareFor(iface, conn.LocalAddr())
	switch {
	case err == nil:
		return nil
	case name == "":
		return fmt.Errorf("--timestamps hardware: %w", err)
	}
	return fmt.Errorf("--timestamps hardware: %w; --timestamps kernel uses the kernel's stamps instead ('volley timestamps %s' shows what the interface can do)", err, name)
}
