package kubernetes

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/volley-net/volley/internal/exporter"
)

// dsRef is a Grafana data source reference.
type dsRef struct {
	Type string `json:"type"`
	UID  string `json:"uid"`
}

// panel is what the tests read of a Grafana panel.
type panel struct {
	Type       string `json:"type"`
	Title      string `json:"title"`
	Datasource *dsRef `json:"datasource"`
	Targets    []struct {
		RefID      string `json:"refId"`
		Expr       string `json:"expr"`
		Format     string `json:"format"`
		Datasource *dsRef `json:"datasource"`
	} `json:"targets"`
	Panels []panel `json:"panels"` // a row's
}

// dashboard is what the tests read of grafana-dashboard.json.
type dashboard struct {
	UID        string `json:"uid"`
	Title      string `json:"title"`
	Templating struct {
		List []struct {
			Name       string `json:"name"`
			Type       string `json:"type"`
			Query      any    `json:"query"` // a string, or {"query": ...}
			Datasource *dsRef `json:"datasource"`
		} `json:"list"`
	} `json:"templating"`
	Panels []panel `json:"panels"`
}

func readDashboard(t *testing.T) *dashboard {
	t.Helper()
	b, err := os.ReadFile("grafana-dashboard.json")
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("grafana-dashboard.json: %v", err)
	}
	return &d
}

// allPanels returns ps and the panels of their rows.
func allPanels(ps []panel) []panel {
	var all []panel
	for _, p := range ps {
		all = append(all, p)
		all = append(all, allPanels(p.Panels)...)
	}
	return all
}

// query is a PromQL expression of the dashboard, and where it is.
type query struct {
	where, expr string
}

// dashboardQueries returns the dashboard's panel expressions, and the
// series selectors of its variables' label_values(SELECTOR, LABEL).
func dashboardQueries(t *testing.T, d *dashboard) []query {
	t.Helper()
	var qs []query
	for _, p := range allPanels(d.Panels) {
		for _, tg := range p.Targets {
			qs = append(qs, query{fmt.Sprintf("panel %q, query %s", p.Title, tg.RefID), tg.Expr})
		}
	}
	for _, v := range d.Templating.List {
		if v.Type != "query" {
			continue
		}
		q, _ := v.Query.(string)
		if m, ok := v.Query.(map[string]any); ok {
			q, _ = m["query"].(string)
		}
		args, ok := strings.CutPrefix(q, "label_values(")
		i := strings.LastIndex(args, ",")
		if !ok || i < 0 {
			t.Errorf("variable %s: query %q; want label_values(SELECTOR, LABEL), which the test reads", v.Name, q)
			continue
		}
		qs = append(qs, query{"variable " + v.Name, args[:i]})
	}
	return qs
}

// TestDashboard: the data source is a variable that every panel and query
// uses; the panels the issue asks for are there: an RTT heatmap from the
// histogram's buckets, loss up and loss down, a per-pair table.
func TestDashboard(t *testing.T) {
	d := readDashboard(t)
	if d.UID == "" || d.Title == "" {
		t.Errorf("dashboard uid %q, title %q; want both", d.UID, d.Title)
	}
	ds := ""
	for _, v := range d.Templating.List {
		if v.Type == "datasource" && v.Query == "prometheus" {
			ds = "${" + v.Name + "}"
		}
	}
	if ds == "" {
		t.Fatal("no variable of type datasource for prometheus: the data source is not templated")
	}
	for _, v := range d.Templating.List {
		if v.Type == "query" && (v.Datasource == nil || v.Datasource.UID != ds) {
			t.Errorf("variable %s's data source is %v; want %s", v.Name, v.Datasource, ds)
		}
	}
	want := map[string]bool{"heatmap": false, "loss up": false, "loss down": false, "table": false}
	for _, p := range allPanels(d.Panels) {
		if p.Type != "row" && (p.Datasource == nil || p.Datasource.UID != ds) {
			t.Errorf("panel %q's data source is %v; want %s", p.Title, p.Datasource, ds)
		}
		for _, tg := range p.Targets {
			if tg.Datasource == nil || tg.Datasource.UID != ds {
				t.Errorf("panel %q, query %s: data source %v; want %s", p.Title, tg.RefID, tg.Datasource, ds)
			}
			switch {
			case p.Type == "heatmap" && tg.Format == "heatmap" && slices.Contains(metricNames(tg.Expr), exporter.RTT+"_bucket"):
				want["heatmap"] = true
			case p.Type == "timeseries" && strings.Contains(tg.Expr, exporter.ProbesLost+`{direction="up"`):
				want["loss up"] = true
			case p.Type == "timeseries" && strings.Contains(tg.Expr, exporter.ProbesLost+`{direction="down"`):
				want["loss down"] = true
			case p.Type == "table" && tg.Format == "table":
				want["table"] = true
			}
		}
	}
	for k, ok := range want {
		if !ok {
			t.Errorf("the dashboard has no %s panel", k)
		}
	}
}

// grafanaVar is a Grafana variable in an expression: $x, ${x}, ${x:fmt}.
var grafanaVar = regexp.MustCompile(`\$\{?(\w+)(:\w+)?\}?`)

// TestDashboardPromQL: every expression of the dashboard parses, with its
// variables replaced (intervals by 5m, the rest by .*): promtool checks
// them as the expressions of recording rules.
func TestDashboardPromQL(t *testing.T) {
	tool := promtool(t)
	type rule struct {
		Record string `yaml:"record"`
		Expr   string `yaml:"expr"`
	}
	var file struct {
		Groups []struct {
			Name  string `yaml:"name"`
			Rules []rule `yaml:"rules"`
		} `yaml:"groups"`
	}
	file.Groups = make([]struct {
		Name  string `yaml:"name"`
		Rules []rule `yaml:"rules"`
	}, 1)
	file.Groups[0].Name = "dashboard"
	qs := dashboardQueries(t, readDashboard(t))
	for i, q := range qs {
		expr := grafanaVar.ReplaceAllStringFunc(q.expr, func(v string) string {
			if strings.HasPrefix(strings.TrimLeft(v, "${"), "__") {
				return "5m"
			}
			return ".*"
		})
		file.Groups[0].Rules = append(file.Groups[0].Rules, rule{fmt.Sprintf("dashboard_query_%d", i), expr})
	}
	b, err := yaml.Marshal(&file)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "dashboard-rules.yml")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(tool, "check", "rules", path).CombinedOutput()
	if err != nil {
		t.Fatalf("promtool check rules on the dashboard's %d queries: %v\n%s\n%s", len(qs), err, out, b)
	}
	if !strings.Contains(string(out), fmt.Sprintf("SUCCESS: %d rules found", len(qs))) {
		t.Fatalf("promtool check rules on the dashboard's %d queries:\n%s", len(qs), out)
	}
}
