package kubernetes

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/volley-net/volley/internal/exporter"
)

// histograms are the exporter's histograms: they are scraped as series
// with these suffixes.
var histograms = []string{exporter.RTT, exporter.Delay, exporter.Response, exporter.IPDV}

// exported returns the names of the series the exporter exports.
func exported() map[string]bool {
	names := map[string]bool{}
	for _, n := range []string{
		exporter.ProbesSent, exporter.ProbesReceived, exporter.ProbesLost,
		exporter.ProbesDuplicated, exporter.ProbesReordered, exporter.ProbesLate,
		exporter.ProbesSkipped, exporter.Reconnects,
		exporter.ClockOffset, exporter.TargetUp,
		exporter.MonitorTargets, exporter.MonitorTargetsUp, exporter.MonitorScheduleLag,
		exporter.MonitorReloads, exporter.MonitorReloadSuccess, exporter.MonitorRateScale,
		exporter.BuildInfo,
	} {
		names[n] = true
	}
	for _, h := range histograms {
		for _, s := range []string{"_bucket", "_sum", "_count"} {
			names[h+s] = true
		}
	}
	return names
}

// rules is what TestMetricNames reads of rules.yml.
type rules struct {
	Groups []struct {
		Name  string `yaml:"name"`
		Rules []struct {
			Record string `yaml:"record"`
			Alert  string `yaml:"alert"`
			Expr   string `yaml:"expr"`
		} `yaml:"rules"`
	} `yaml:"groups"`
}

// recorded returns the names rules.yml records.
func recorded(t *testing.T) map[string]bool {
	var r rules
	readYAML(t, "rules.yml", &r)
	names := map[string]bool{}
	for _, g := range r.Groups {
		for _, rule := range g.Rules {
			if rule.Record != "" {
				names[rule.Record] = true
			}
		}
	}
	return names
}

// checkNames fails t for each name in names that is neither exported
// nor recorded, saying where it was used, and returns how many of names
// the exporter exports.
func checkNames(t *testing.T, where string, names []string, recorded map[string]bool) int {
	t.Helper()
	known := exported()
	n := 0
	for _, name := range names {
		switch {
		case known[name]:
			n++
		case recorded[name]:
		default:
			t.Errorf("%s uses %s, which internal/exporter does not export and rules.yml does not record", where, name)
		}
	}
	return n
}

// TestMetricNames: every metric name rules.yml, the dashboard and the
// scrape configurations use is one internal/exporter exports (histograms
// with their _bucket, _sum and _count suffixes), or one rules.yml records.
func TestMetricNames(t *testing.T) {
	rec := recorded(t)
	var r rules
	readYAML(t, "rules.yml", &r)
	n := 0
	for _, g := range r.Groups {
		for _, rule := range g.Rules {
			n += checkNames(t, "rules.yml: "+rule.Record+rule.Alert, metricNames(rule.Expr), rec)
		}
	}
	if n < 6 {
		t.Errorf("rules.yml uses exported names %d times; the check saw too little", n)
	}
	n = 0
	for _, q := range dashboardQueries(t, readDashboard(t)) {
		n += checkNames(t, "grafana-dashboard.json: "+q.where, metricNames(q.expr), rec)
	}
	if n < 5 {
		t.Errorf("grafana-dashboard.json uses exported names %d times; the check saw too little", n)
	}
	var sc scrapeConfig
	readYAML(t, "scrape-config.yml", &sc)
	var sm serviceMonitor
	readYAML(t, "servicemonitor.yaml", &sm)
	for _, job := range sc.ScrapeConfigs {
		checkNames(t, "scrape-config.yml: "+job.JobName, relabelNames(t, job.MetricRelabelConfigs), rec)
	}
	for _, e := range sm.Spec.Endpoints {
		checkNames(t, "servicemonitor.yaml: port "+e.Port, relabelNames(t, e.MetricRelabelings), rec)
	}
}

// relabelNames returns the metric names that relabellings on __name__
// match: their regexes must be lists of names (a|b|c) for the test to
// read them.
func relabelNames(t *testing.T, rs []map[string]any) []string {
	t.Helper()
	var names []string
	for _, r := range rs {
		src := fmt.Sprint(r["source_labels"], r["sourceLabels"])
		if !strings.Contains(src, "__name__") {
			continue
		}
		re, _ := r["regex"].(string)
		for _, name := range strings.Split(re, "|") {
			if !isName(name) {
				t.Errorf("relabelling regex %q on __name__ is not a list of names: the test cannot check them", re)
				break
			}
			names = append(names, name)
		}
	}
	return names
}

// isName reports whether s is a metric name.
func isName(s string) bool {
	if s == "" || isDigit(s[0]) {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !isIdent(s[i]) {
			return false
		}
	}
	return true
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func isIdent(c byte) bool {
	return c == '_' || c == ':' || isDigit(c) || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// PromQL's words that are not metric names: keywords and aggregations
// (which "by (...)" may part from their parenthesis), and the ones
// followed by a list of label names.
var (
	keywords = map[string]bool{
		"and": true, "or": true, "unless": true, "bool": true, "offset": true, "atan2": true, "inf": true, "nan": true,
		"sum": true, "min": true, "max": true, "avg": true, "group": true, "stddev": true, "stdvar": true, "count": true,
		"count_values": true, "bottomk": true, "topk": true, "quantile": true, "limitk": true, "limit_ratio": true,
	}
	grouping = map[string]bool{"by": true, "without": true, "on": true, "ignoring": true, "group_left": true, "group_right": true}
)

// metricNames returns the metric names that the PromQL expression expr
// selects: its words that are not in strings, label matchers ({...}),
// ranges ([...]), label lists (by (...)), Grafana variables ($x), nor
// numbers, keywords or functions. It is a lexer, not a parser: enough
// for the expressions of this directory, which promtool parses too.
func metricNames(expr string) []string {
	var names []string
	s := expr
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '"' || c == '\'' || c == '`':
			i = skipString(s, i)
		case c == '{':
			i = skipTo(s, i, '}')
		case c == '[':
			i = skipTo(s, i, ']')
		case c == '#':
			i = skipTo(s, i, '\n')
		case c == '$':
			i++
			if i < len(s) && s[i] == '{' {
				i = skipTo(s, i, '}')
			}
			for i < len(s) && isIdent(s[i]) {
				i++
			}
		case isDigit(c) || c == '.':
			for i++; i < len(s) && (isIdent(s[i]) || s[i] == '.' || (s[i] == '-' || s[i] == '+') && (s[i-1] == 'e' || s[i-1] == 'E')); i++ {
			}
		case isIdent(c):
			j := i
			for j < len(s) && isIdent(s[j]) {
				j++
			}
			word := s[i:j]
			k := j
			for k < len(s) && (s[k] == ' ' || s[k] == '\t' || s[k] == '\n') {
				k++
			}
			paren := k < len(s) && s[k] == '('
			switch {
			case grouping[word] && paren:
				j = skipTo(s, k, ')')
			case grouping[word], keywords[strings.ToLower(word)], paren:
			default:
				names = append(names, word)
			}
			i = j
		default:
			i++
		}
	}
	return names
}

// skipString returns the index just after the string that starts at
// s[i].
func skipString(s string, i int) int {
	q := s[i]
	for j := i + 1; j < len(s); j++ {
		switch s[j] {
		case '\\':
			if q != '`' {
				j++
			}
		case q:
			return j + 1
		}
	}
	return len(s)
}

// skipTo returns the index just after the first close at or after s[i+1]
// that is not in a string.
func skipTo(s string, i int, close byte) int {
	for j := i + 1; j < len(s); {
		switch s[j] {
		case '"', '\'', '`':
			j = skipString(s, j)
		case close:
			return j + 1
		default:
			j++
		}
	}
	return len(s)
}

func TestMetricNamesLexer(t *testing.T) {
	for _, tt := range []struct {
		expr string
		want []string
	}{
		{`sum by (le) (rate(volley_rtt_seconds_bucket{target=~"a}b", le!="x"}[5m]))`, []string{"volley_rtt_seconds_bucket"}},
		{"rate(a[5m])\n/ ignoring (direction) group_left ()\n(rate(b[5m]) > 0)", []string{"a", "b"}},
		{`histogram_quantile(0.99, x) offset 5m and on(instance) y unless z > bool 1e-3`, []string{"x", "y", "z"}},
		{`sum(rate(a{i=~"$instance"}[$__rate_interval])) without (target) / ${x} + Inf`, []string{"a"}},
		{`target:volley_probes_lost:ratio_rate5m{direction='up'} > 0.01`, []string{"target:volley_probes_lost:ratio_rate5m"}},
		{`max by (instance, node, target) (r:x:y) or vector(1)`, []string{"r:x:y"}},
	} {
		if got := metricNames(tt.expr); !slices.Equal(got, tt.want) {
			t.Errorf("metricNames(%q) = %q, want %q", tt.expr, got, tt.want)
		}
	}
}
