package cli

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/volley-net/volley/internal/load"
	"github.com/volley-net/volley/internal/report"
	"github.com/volley-net/volley/internal/units"
)

// The server's load flags: --allow-load, --max-load-rate.

// loadServerFlags are the flags of the bulk streams a server serves to
// clients' --load.
type loadServerFlags struct {
	allow   bool
	maxRate bitRate
}

// register defines the load flags on cmd.
func (f *loadServerFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.BoolVar(&f.allow, "allow-load", false, "serve clients' bulk streams (volley client --load) on the TCP and Unix stream listeners: downloads from this host, uploads to it; off by default, since a bulk source is an amplifier")
	f.maxRate = load.DefaultMaxRate
	fl.Var(&f.maxRate, "max-load-rate", "most bits/s sent over all the load streams together, k, M and G suffixes (thousands, millions, billions): 0 (no limit) or 8k to 1000G")
}

// server returns the load server the flags ask for (nil without
// --allow-load), whose streams are cut after sendTimeout without progress.
func (f *loadServerFlags) server(cmd *cobra.Command, sendTimeout time.Duration) (*load.Server, error) {
	if !f.allow {
		if cmd.Flags().Changed("max-load-rate") {
			return nil, usagef("--max-load-rate %s: no load is served without --allow-load", f.maxRate)
		}
		return nil, nil
	}
	// The flag's value as it is: its default is load.DefaultMaxRate, 0 no
	// limit, as ServerConfig.MaxRate takes them.
	return load.NewServer(load.ServerConfig{MaxRate: float64(f.maxRate), SendTimeout: sendTimeout}), nil
}

// The load server's lines: after each interval's line, one for its
// streams when any moved, were granted or refused, or ended; after the
// totals, its totals.

// loadLines follows a load server's counters for the server's lines.
type loadLines struct {
	srv  *load.Server // nil: no --allow-load, no lines
	last load.Counters
}

// interval returns the line of the load streams over the interval that
// ended now and lasted elapsed ("" when nothing happened in it): the
// streams open now, those served (granted) and refused in it, and the rates each
// way.
func (l *loadLines) interval(elapsed time.Duration) string {
	if l.srv == nil {
		return ""
	}
	c := l.srv.Counters()
	d := load.Counters{Streams: c.Streams, Served: c.Served - l.last.Served, Refused: c.Refused - l.last.Refused,
		Sent: c.Sent - l.last.Sent, Received: c.Received - l.last.Received}
	quiet := d.Served == 0 && d.Refused == 0 && d.Sent == 0 && d.Received == 0 && c.Streams == l.last.Streams
	l.last = c
	if quiet {
		return ""
	}
	bits := func(n uint64) string {
		if elapsed <= 0 {
			return "0"
		}
		return report.SI(8 * float64(n) / elapsed.Seconds())
	}
	return fmt.Sprintf("load: streams %d, served %d, refused %d, sent %sbit/s, received %sbit/s\n",
		d.Streams, d.Served, d.Refused, bits(d.Sent), bits(d.Received))
}

// totals returns the load server's totals line ("" without one).
func (l *loadLines) totals() string {
	if l.srv == nil {
		return ""
	}
	c := l.srv.Counters()
	return fmt.Sprintf("--- load totals: streams served %d, refused %d, sent %sB, received %sB\n",
		c.Served, c.Refused, report.SI(float64(c.Sent)), report.SI(float64(c.Received)))
}

// bitRate is a flag of bits/s as units.ParseBitRate reads them (k, M or
// G, decimal, as iperf's rates: 100M is 100,000,000 bits/s): 0 for no
// limit, or a cap load.NewServer takes as it is.
type bitRate float64

func (r bitRate) String() string { return units.FormatBitRate(float64(r)) }

func (r *bitRate) Set(v string) error {
	f, err := units.ParseBitRate(v)
	if err != nil {
		return err
	}
	if f != 0 && (f < load.LowestMaxRate || f > load.HighestMaxRate) {
		return fmt.Errorf("want 0 (no limit) or %s to %s bits/s", units.FormatBitRate(load.LowestMaxRate), units.FormatBitRate(load.HighestMaxRate))
	}
	*r = bitRate(f)
	return nil
}

func (r *bitRate) Type() string { return "bits/s" }
