// Package exporter publishes what the monitor measures as Prometheus
// metrics: a Sink for the monitor's targets, the agent's own health, and
// an HTTP server for /metrics and /probe with a deadline on every read and
// write and a bound on connections per source. Only this package imports
// the Prometheus client library.
package exporter

// The metrics' names, in base units with the volley_ prefix. Every series
// of a target carries the labels "target" (its name) and the user's
// labels; those with a direction carry "direction" ("up": client to
// reflector, "down": back).
const (
	// Counters per target.
	ProbesSent       = "volley_probes_sent_total"
	ProbesReceived   = "volley_probes_received_total"
	ProbesLost       = "volley_probes_lost_total"       // direction
	ProbesDuplicated = "volley_probes_duplicated_total" // direction
	ProbesReordered  = "volley_probes_reordered_total"  // direction
	ProbesLate       = "volley_probes_late_total"
	ProbesSkipped    = "volley_probes_skipped_total"
	Reconnects       = "volley_reconnects_total"
	// Histograms per target: classic buckets from 10µs to 10s, and native
	// buckets for scrapers that negotiate them.
	RTT      = "volley_rtt_seconds"
	Delay    = "volley_delay_seconds" // direction; one way, as the two clocks read it
	Response = "volley_response_seconds"
	IPDV     = "volley_ipdv_seconds"
	// Gauges per target.
	ClockOffset = "volley_clock_offset_seconds"
	TargetUp    = "volley_target_up"
	// The monitor's health.
	MonitorTargets       = "volley_monitor_targets"
	MonitorTargetsUp     = "volley_monitor_targets_up"
	MonitorScheduleLag   = "volley_monitor_schedule_lag_seconds"
	MonitorReloads       = "volley_monitor_reloads_total"       // source, result
	MonitorReloadSuccess = "volley_monitor_last_reload_success" // source
	MonitorRateScale     = "volley_monitor_rate_scale"
	BuildInfo            = "volley_build_info"
)

// The metrics of one /probe answer: gauges of that probe's figures, and
// summaries (quantiles 0.5, 0.9, 0.99) of its delays. They carry no
// target label: the scraper adds its own.
const (
	ProbeSuccess  = "volley_probe_success"
	ProbeDuration = "volley_probe_duration_seconds"
	ProbeSent     = "volley_probe_sent"
	ProbeReceived = "volley_probe_received"
	ProbeLost     = "volley_probe_lost"          // direction
	ProbeRTT      = "volley_probe_rtt_seconds"   // summary
	ProbeDelay    = "volley_probe_delay_seconds" // summary; direction
)

// Buckets are the classic histograms' upper bounds in seconds: 10µs to
// 10s, four per decade (1, 1.8, 3.2, 5.6 of each power of ten), written
// out so that each prints as a round number (le="0.001", not
// le="0.0009999999999999998": a query names them).
var Buckets = []float64{
	10e-6, 18e-6, 32e-6, 56e-6,
	100e-6, 180e-6, 320e-6, 560e-6,
	1e-3, 1.8e-3, 3.2e-3, 5.6e-3,
	10e-3, 18e-3, 32e-3, 56e-3,
	0.1, 0.18, 0.32, 0.56,
	1, 1.8, 3.2, 5.6,
	10,
}
