// Command volley measures latency, jitter, loss and throughput between a
// client and a reflector. See README.md.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/volley-net/volley/internal/cli"
)

// noticeAfter is how long volley may take to finish after a signal before
// it says that it is still finishing, and how to stop it at once.
const noticeAfter = 500 * time.Millisecond

// exitInterrupted is the exit code after a second signal: 128 + SIGINT, as
// a shell reports a process that SIGINT ended.
const exitInterrupted = 130

func main() {
	// SIGINT, SIGTERM and SIGHUP (the terminal went away) each end a run
	// with its report. SIGHUP only where it is not ignored: a volley
	// started with nohup goes on when its terminal closes; and not for
	// the commands that run as daemons, which read their files again on
	// SIGHUP (volley monitor, volley agent).
	sigs := []os.Signal{os.Interrupt, syscall.SIGTERM}
	if !signal.Ignored(syscall.SIGHUP) && !cli.ReloadsOnHangup(os.Args[1:]) {
		sigs = append(sigs, syscall.SIGHUP)
	}
	ch := make(chan os.Signal, 2)
	signal.Notify(ch, sigs...)
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		sig := <-ch
		cancel()
		// Finishing takes at most max(--timeout, 1s) (the client waits
		// for the probes in flight and the reflector's final count):
		// when it takes a while, say so, and from then on let a second
		// signal end volley at once, without the report. Signals before
		// that are the first one again (GNU timeout signals its child,
		// then its process group) or impatience that finishing will
		// serve: they change nothing.
		notice := time.After(noticeAfter)
	wait:
		for {
			select {
			case <-ch:
			case <-notice:
				fmt.Fprintf(os.Stderr, "volley: %s: finishing; a second signal (Ctrl-C) quits at once, without the report\n", sigName(sig))
				break wait
			}
		}
		<-ch
		fmt.Fprintln(os.Stderr, "volley: signalled again: quitting at once, without the report")
		os.Exit(exitInterrupted)
	}()
	code := cli.Main(ctx, os.Args[1:], os.Stdout, os.Stderr)
	signal.Stop(ch)
	cancel()
	os.Exit(code)
}

func sigName(sig os.Signal) string {
	switch sig {
	case os.Interrupt:
		return "interrupted"
	case syscall.SIGTERM:
		return "terminated"
	case syscall.SIGHUP:
		return "hung up"
	}
	return sig.String()
}
