package exporter

import (
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/volley-net/volley/internal/monitor"
)

// maxReloadSources bounds the sources the reload metrics keep a series
// for: a source past it is counted under "other".
const maxReloadSources = 256

// Health is the monitor's Health as metrics: the targets and how many
// answer, the schedule's lag, each source's reloads, the rate scale, and
// the build. It is safe for concurrent use.
type Health struct {
	targets, targetsUp, lag, rateScale prometheus.Gauge
	reloads                            *prometheus.CounterVec
	lastReload                         *prometheus.GaugeVec
	build                              prometheus.Gauge

	mu      sync.Mutex
	sources map[string]bool
}

var _ monitor.Health = (*Health)(nil)

// NewHealth returns a Health with no targets, a rate scale of 1, and the
// build's version.
func NewHealth() *Health {
	version, goVersion := buildVersion()
	h := &Health{
		targets: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: MonitorTargets, Help: "Targets in the set."}),
		targetsUp: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: MonitorTargetsUp, Help: "Targets whose session is open."}),
		lag: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: MonitorScheduleLag, Help: "The largest send error (actual minus scheduled send time) of any target's latest interval."}),
		rateScale: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: MonitorRateScale, Help: "The factor every target's rate is scaled by to keep the process under its cap of probes per second (1: none)."}),
		reloads: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: MonitorReloads, Help: "Reads of a target source (a file, a DNS name), by whether they worked."}, []string{"source", "result"}),
		lastReload: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: MonitorReloadSuccess, Help: "1 when the source's latest read worked, 0 when it failed (the last good set is kept)."}, []string{"source"}),
		build: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: BuildInfo, Help: "Always 1: the labels say the build's version and Go version.",
			ConstLabels: prometheus.Labels{"version": version, "goversion": goVersion}}),
		sources: make(map[string]bool),
	}
	h.rateScale.Set(1)
	h.build.Set(1)
	return h
}

// buildVersion returns volley's module version and the Go version it was
// built with.
func buildVersion() (version, goVersion string) {
	version, goVersion = "unknown", runtime.Version()
	if bi, ok := debug.ReadBuildInfo(); ok {
		if bi.Main.Version != "" {
			version = bi.Main.Version
		}
		if bi.GoVersion != "" {
			goVersion = bi.GoVersion
		}
	}
	return version, goVersion
}

// Register registers the health metrics on reg, with client_golang's Go
// and process collectors.
func (h *Health) Register(reg prometheus.Registerer) error {
	for _, c := range []prometheus.Collector{
		h.targets, h.targetsUp, h.lag, h.rateScale, h.reloads, h.lastReload, h.build,
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	} {
		if err := reg.Register(c); err != nil {
			return err
		}
	}
	return nil
}

// Targets sets the number of targets, and how many answer.
func (h *Health) Targets(n, up int) {
	h.targets.Set(float64(n))
	h.targetsUp.Set(float64(up))
}

// Lag sets the schedule's lag.
func (h *Health) Lag(d time.Duration) { h.lag.Set(d.Seconds()) }

// RateScale sets the rate scale.
func (h *Health) RateScale(f float64) { h.rateScale.Set(f) }

// Reload counts a read of source, and whether it worked.
func (h *Health) Reload(source string, err error) {
	source = h.bounded(source)
	ok, outcome := 1.0, "success"
	if err != nil {
		ok, outcome = 0, "failure"
	}
	h.reloads.WithLabelValues(source, outcome).Inc()
	h.lastReload.WithLabelValues(source).Set(ok)
}

// Forget deletes what Reload said of source: a DNS name that left the set
// must not keep a failure (and an alert on it) for ever.
func (h *Health) Forget(source string) {
	source = strings.ToValidUTF8(source, "\uFFFD")
	h.mu.Lock()
	known := h.sources[source]
	delete(h.sources, source)
	h.mu.Unlock()
	if !known {
		return // counted as "other", which stays
	}
	h.lastReload.DeleteLabelValues(source)
	for _, outcome := range []string{"success", "failure"} {
		h.reloads.DeleteLabelValues(source, outcome)
	}
}

// bounded returns source (made valid UTF-8), or "other" once
// maxReloadSources sources have their series.
func (h *Health) bounded(source string) string {
	source = strings.ToValidUTF8(source, "\uFFFD")
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.sources[source] {
		return source
	}
	if len(h.sources) >= maxReloadSources {
		return "other"
	}
	h.sources[source] = true
	return source
}

// NewRegistry returns a registry holding the sink's targets (s may be
// nil) and h's health metrics (h may be nil): what /metrics serves.
func NewRegistry(s *Sink, h *Health) (*prometheus.Registry, error) {
	reg := prometheus.NewRegistry()
	if s != nil {
		if err := reg.Register(s); err != nil {
			return nil, err
		}
	}
	if h != nil {
		if err := h.Register(reg); err != nil {
			return nil, err
		}
	}
	return reg, nil
}
