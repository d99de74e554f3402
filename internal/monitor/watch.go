package monitor

import (
	"context"
	"crypto/sha256"
	"os"
	"reflect"
	"time"
)

// The watcher's default periods: how often the targets file's content is
// compared with the last read's, and how often DNS names are resolved.
const (
	DefaultPoll         = 2 * time.Second
	DefaultResolveEvery = 30 * time.Second
)

// WatchConfig says where a Watcher's targets come from and where they go.
type WatchConfig struct {
	// Targets are the fixed ones (the command line's).
	Targets []Target
	// File, when set, is a targets file (see ParseFile), read with
	// FileOptions: again on Reload, and when its content changes.
	File        string
	FileOptions FileOptions
	// Reload, when set, asks for the file to be read again (SIGHUP).
	Reload <-chan os.Signal
	// Poll is how often the file's content is compared with the last
	// read's (DefaultPoll when 0); ResolveEvery how often DNS names are
	// looked up again (DefaultResolveEvery when 0).
	Poll         time.Duration
	ResolveEvery time.Duration
	// Lookup resolves DNS names (DefaultLookup when nil); MaxAddresses is
	// the most addresses a name expands to (MaxAddresses when 0).
	Lookup       LookupFunc
	MaxAddresses int
	// Select, when set, makes the set from the peers (the fixed targets,
	// the file's, with DNS names expanded): an agent's Mesh. An error
	// keeps the last good set. When nil, every peer is a target.
	Select func(peers []Peer) ([]Target, error)
	// Set takes the whole new set (Monitor.Set); an error keeps the last
	// good one.
	Set func(ts []Target) error
	// Health hears every read of the file and lookup of a name; Log
	// (either may be nil) one line per failure.
	Health Health
	Log    func(format string, args ...any)
}

// Watcher keeps a set of targets up to date: the fixed ones, a targets
// file's (read again on SIGHUP and when its content changes), and the
// addresses of their DNS names (resolved again every period). It calls
// Set with the whole set whenever it changes; a bad file, a failed lookup
// or a refused set keeps the last good one.
type Watcher struct {
	cfg WatchConfig
	dns *dnsCache

	// Owned by the goroutine that runs Load and Run.
	loaded  bool
	hash    [32]byte // of the file's last read (or of its read error)
	file    []Peer   // the file's last good peers
	applied []Target // the set last taken by Set
	set     bool     // whether Set took one
}

// NewWatcher returns a watcher of cfg's sources.
func NewWatcher(cfg WatchConfig) *Watcher {
	if cfg.Poll <= 0 {
		cfg.Poll = DefaultPoll
	}
	if cfg.ResolveEvery <= 0 {
		cfg.ResolveEvery = DefaultResolveEvery
	}
	return &Watcher{cfg: cfg, dns: newDNSCache(cfg.Lookup, cfg.MaxAddresses, cfg.Health, cfg.Log)}
}

// Load reads the file, resolves the DNS names and sets the first set. It
// returns the file's, Select's or Set's error (a caller may stop there;
// with a bad file the fixed targets are set meanwhile); DNS names that do
// not resolve are not errors, but Select may fail for want of their
// addresses (an agent not yet among its Service's). Load must not run at
// the same time as Run, which calls it when it was not called before.
func (w *Watcher) Load(ctx context.Context) error {
	w.loaded = true
	return w.update(ctx, true)
}

// Run keeps the set up to date until ctx is done.
func (w *Watcher) Run(ctx context.Context) error {
	if !w.loaded {
		_ = w.Load(ctx) // reported to Health and Log
	}
	poll := time.NewTicker(w.cfg.Poll)
	defer poll.Stop()
	resolve := time.NewTicker(w.cfg.ResolveEvery)
	defer resolve.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-w.cfg.Reload:
			_ = w.update(ctx, true)
		case <-poll.C:
			_ = w.update(ctx, false)
		case <-resolve.C:
			if w.dns.resolve(ctx, dnsNames(w.peers(w.file))) {
				if err := w.apply(ctx, w.file); err != nil && w.cfg.Log != nil {
					w.cfg.Log("targets after a DNS change: %v (keeping the last good set)", err)
				}
			}
		}
	}
}

// source names the file in Health.Reload.
func (w *Watcher) source() string {
	s := w.cfg.FileOptions.Source
	if s == "" {
		s = "file"
	}
	return s + ":" + w.cfg.File
}

// update reads the file when force is set or its content changed, and
// applies the set it makes. It returns the file's or the set's error.
func (w *Watcher) update(ctx context.Context, force bool) error {
	if w.cfg.File == "" {
		if force {
			return w.apply(ctx, nil)
		}
		return nil
	}
	b, err := readFileBounded(w.cfg.File)
	sum := sha256.Sum256(b)
	if err != nil {
		sum = sha256.Sum256([]byte(err.Error()))
	}
	if !force && sum == w.hash {
		return nil
	}
	w.hash = sum
	var file []Peer
	if err == nil {
		file, err = ParseFile(w.cfg.File, b, w.cfg.FileOptions)
	}
	if err == nil {
		err = w.apply(ctx, file)
	}
	if w.cfg.Health != nil {
		w.cfg.Health.Reload(w.source(), err)
	}
	if err != nil && w.cfg.Log != nil {
		w.cfg.Log("%s: %v (keeping the last good set)", w.source(), err)
	}
	if err != nil && !w.set {
		// No good set yet: the fixed targets run meanwhile.
		if err := w.apply(ctx, nil); err != nil && w.cfg.Log != nil {
			w.cfg.Log("targets: %v", err)
		}
	}
	return err
}

// peers returns the fixed targets and file's peers.
func (w *Watcher) peers(file []Peer) []Peer {
	ps := make([]Peer, 0, len(w.cfg.Targets)+len(file))
	for _, t := range w.cfg.Targets {
		ps = append(ps, Peer{Target: t})
	}
	return append(ps, file...)
}

// apply makes the set from the fixed targets and the file's peers file,
// resolving the names not looked up yet, and gives it to Set when it
// changed. On success, file is the file's last good list.
func (w *Watcher) apply(ctx context.Context, file []Peer) error {
	ps := w.peers(file)
	names := dnsNames(ps)
	w.dns.keep(append(names, dnsNames(w.peers(w.file))...))
	var fresh []string
	for _, h := range names {
		if !w.dns.known(h) {
			fresh = append(fresh, h)
		}
	}
	w.dns.resolve(ctx, fresh)
	ps = w.dns.expand(ps)
	var ts []Target
	if w.cfg.Select != nil {
		var err error
		if ts, err = w.cfg.Select(ps); err != nil {
			return err
		}
	} else {
		ts = make([]Target, len(ps))
		for i, p := range ps {
			ts[i] = p.Target
		}
	}
	if !w.set || !reflect.DeepEqual(ts, w.applied) {
		if err := w.cfg.Set(ts); err != nil {
			return err
		}
		w.applied, w.set = ts, true
	}
	w.file = file
	return nil
}
