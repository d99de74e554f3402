// Command volley measures latency, jitter, loss and throughput between a
// client and a reflector. See README.md.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/volley-net/volley/internal/cli"
)

func main() {
	// SIGINT, SIGTERM and SIGHUP (the terminal went away) each end a run
	// with its report. SIGHUP only where it is not ignored: a volley
	// started with nohup goes on when its terminal closes.
	sigs := []os.Signal{os.Interrupt, syscall.SIGTERM}
	if !signal.Ignored(syscall.SIGHUP) {
		sigs = append(sigs, syscall.SIGHUP)
	}
	ctx, stop := signal.NotifyContext(context.Background(), sigs...)
	code := cli.Main(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
