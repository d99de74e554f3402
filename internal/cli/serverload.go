package cli

import (
	"errors"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/volley-net/volley/internal/load"
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
	fl.BoolVar(&f.allow, "allow-load", false, "serve clients' bulk streams (volley client --load) over TCP and Unix streams: downloads from this host, uploads to it; off by default, since a bulk source is an amplifier")
	f.maxRate = load.DefaultMaxRate
	fl.Var(&f.maxRate, "max-load-rate", "most bits/s sent over all the load streams together, k, M and G suffixes (thousands, millions, billions); 0: no limit")
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
	cfg := load.ServerConfig{MaxRate: float64(f.maxRate), SendTimeout: sendTimeout}
	if f.maxRate == 0 {
		cfg.MaxRate = -1 // no limit
	}
	return load.NewServer(cfg), nil
}

// bitRate is a flag of bits/s with k, M or G suffixes (decimal, as
// iperf's rates: 100M is 100,000,000 bits/s).
type bitRate float64

func (r bitRate) String() string {
	f := float64(r)
	for _, u := range []struct {
		mult   float64
		suffix string
	}{{1e9, "G"}, {1e6, "M"}, {1e3, "k"}} {
		if f >= u.mult {
			return strconv.FormatFloat(f/u.mult, 'f', -1, 64) + u.suffix
		}
	}
	return strconv.FormatFloat(f, 'f', -1, 64)
}

func (r *bitRate) Set(v string) error {
	mult, num := 1.0, v
	if n := len(v); n > 0 {
		switch v[n-1] {
		case 'k', 'K':
			mult, num = 1e3, v[:n-1]
		case 'm', 'M':
			mult, num = 1e6, v[:n-1]
		case 'g', 'G':
			mult, num = 1e9, v[:n-1]
		}
	}
	f, err := strconv.ParseFloat(num, 64)
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) || f < 0 || strings.ContainsAny(num, "xXpP_eE") {
		return errors.New("want bits/s: a number of 0 or more with k, M or G (thousands, millions, billions), such as 100M or 1G; 0 for no limit")
	}
	*r = bitRate(f * mult)
	return nil
}

func (r *bitRate) Type() string { return "bits/s" }
