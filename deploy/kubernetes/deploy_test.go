// Package kubernetes holds the tests of the Kubernetes manifests, the
// Prometheus rules and scrape configurations, and the Grafana dashboard
// in this directory (README.md says how to apply them): promtool checks
// and unit-tests the rules (this file), and parses the dashboard's queries
// (dashboard_test.go); the PrometheusRule carries the same groups as
// rules.yml; every metric name they use is one the exporter exports
// (names_test.go); the manifests hang together (the Service selects the
// DaemonSet's pods, ports match, the agent's flags name the Service).
// The directory has no Go code but its tests.
package kubernetes

import (
	"bytes"
	"cmp"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/volley-net/volley/internal/testenv"
)

var update = flag.Bool("update", false, "rewrite prometheusrule.yaml from rules.yml")

// promtool returns the path of promtool, or skips t (fails it when
// VOLLEY_REQUIRE names prometheus).
func promtool(t *testing.T) string {
	t.Helper()
	const path = "/usr/bin/promtool"
	if _, err := os.Stat(path); err == nil {
		return path
	}
	p, err := exec.LookPath("promtool")
	testenv.Require(t, "prometheus", err)
	return p
}

// runPromtool runs promtool with args and fails t with its output if it
// fails.
func runPromtool(t *testing.T, args ...string) string {
	t.Helper()
	out, err := exec.Command(promtool(t), args...).CombinedOutput()
	if err != nil {
		t.Fatalf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

func TestPromtoolCheckRules(t *testing.T) {
	out := runPromtool(t, "check", "rules", "rules.yml")
	if !strings.Contains(out, "SUCCESS") {
		t.Fatalf("promtool check rules rules.yml said no SUCCESS:\n%s", out)
	}
}

func TestPromtoolTestRules(t *testing.T) {
	out := runPromtool(t, "test", "rules", "rules_test.yml")
	if !strings.Contains(out, "SUCCESS") {
		t.Fatalf("promtool test rules rules_test.yml said no SUCCESS:\n%s", out)
	}
}

// readYAML decodes the one YAML document of file into v.
func readYAML(t *testing.T, file string, v any) {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
}

// ruleFile is rules.yml; Groups stays generic, to compare whole.
type ruleFile struct {
	Groups []any `yaml:"groups"`
}

// promRule is what prometheusrule.yaml holds.
type promRule struct {
	APIVersion string   `yaml:"apiVersion"`
	Kind       string   `yaml:"kind"`
	Spec       ruleFile `yaml:"spec"`
}

// promRuleHeader is prometheusrule.yaml up to its spec; -update puts
// rules.yml's groups, indented, below it.
const promRuleHeader = `# Generated from rules.yml by
#   go test ./deploy/kubernetes/ -run TestPrometheusRule -update
# Edit rules.yml, not this file. deploy_test.go checks that the groups are
# the same.
#
# rules.yml for the Prometheus Operator. Your Prometheus picks
# PrometheusRules by label (its ruleSelector): add the label it wants below
# (with kube-prometheus-stack: release: <its release name>).
apiVersion: monitoring.coreos.com/v1
kind: PrometheusRule
metadata:
  name: volley
  labels:
    app.kubernetes.io/name: volley
    app.kubernetes.io/component: agent
spec:
`

// TestPrometheusRule: prometheusrule.yaml carries rules.yml's groups, the
// same once parsed. With -update, it is rewritten from rules.yml.
func TestPrometheusRule(t *testing.T) {
	if *update {
		src, err := os.ReadFile("rules.yml")
		if err != nil {
			t.Fatal(err)
		}
		_, groups, ok := bytes.Cut(src, []byte("\ngroups:\n"))
		if !ok {
			t.Fatal(`rules.yml has no line "groups:"`)
		}
		var b strings.Builder
		b.WriteString(promRuleHeader + "  groups:\n")
		for line := range strings.Lines(string(groups)) {
			if strings.TrimSpace(line) != "" {
				b.WriteString("  ")
			}
			b.WriteString(line)
		}
		if err := os.WriteFile("prometheusrule.yaml", []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var rules ruleFile
	var pr promRule
	readYAML(t, "rules.yml", &rules)
	readYAML(t, "prometheusrule.yaml", &pr)
	if pr.APIVersion != "monitoring.coreos.com/v1" || pr.Kind != "PrometheusRule" {
		t.Errorf("prometheusrule.yaml is a %s %s; want a monitoring.coreos.com/v1 PrometheusRule", pr.APIVersion, pr.Kind)
	}
	if len(rules.Groups) < 2 {
		t.Fatalf("rules.yml has %d groups; want the recording rules and the alerts", len(rules.Groups))
	}
	if len(pr.Spec.Groups) != len(rules.Groups) {
		t.Fatalf("prometheusrule.yaml has %d groups, rules.yml %d; run go test -run TestPrometheusRule -update", len(pr.Spec.Groups), len(rules.Groups))
	}
	for i := range rules.Groups {
		if !reflect.DeepEqual(pr.Spec.Groups[i], rules.Groups[i]) {
			t.Errorf("group %d differs:\nprometheusrule.yaml: %v\nrules.yml:           %v\nrun go test -run TestPrometheusRule -update", i, pr.Spec.Groups[i], rules.Groups[i])
		}
	}
}

// document is what every Kubernetes object has.
type document struct {
	APIVersion string `yaml:"apiVersion"`
	Kind       string `yaml:"kind"`
	Metadata   struct {
		Name      string            `yaml:"name"`
		Namespace string            `yaml:"namespace"`
		Labels    map[string]string `yaml:"labels"`
	} `yaml:"metadata"`
}

// TestManifests: every .yaml file of the directory is Kubernetes objects,
// each with an apiVersion, a kind and a name, and no namespace (the user
// picks it with kubectl -n).
func TestManifests(t *testing.T) {
	files, err := filepath.Glob("*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]bool{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		dec := yaml.NewDecoder(bytes.NewReader(b))
		for n := 1; ; n++ {
			var d document
			err := dec.Decode(&d)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatalf("%s: document %d: %v", f, n, err)
			}
			if d.APIVersion == "" || d.Kind == "" || d.Metadata.Name == "" {
				t.Errorf("%s: document %d: apiVersion %q, kind %q, metadata.name %q; want all three", f, n, d.APIVersion, d.Kind, d.Metadata.Name)
			}
			if d.Metadata.Namespace != "" {
				t.Errorf("%s: %s %s is in namespace %s; want none (kubectl -n picks it)", f, d.Kind, d.Metadata.Name, d.Metadata.Namespace)
			}
			kinds[d.Kind] = true
		}
	}
	for _, k := range []string{"DaemonSet", "Service", "ServiceMonitor", "PrometheusRule"} {
		if !kinds[k] {
			t.Errorf("no %s among %v", k, files)
		}
	}
}

// scrapeConfig is what the tests read of scrape-config.yml.
type scrapeConfig struct {
	RuleFiles     []string `yaml:"rule_files"`
	ScrapeConfigs []struct {
		JobName             string `yaml:"job_name"`
		KubernetesSDConfigs []struct {
			Role      string `yaml:"role"`
			Selectors []struct {
				Role  string `yaml:"role"`
				Label string `yaml:"label"`
			} `yaml:"selectors"`
			AttachMetadata struct {
				Node bool `yaml:"node"`
			} `yaml:"attach_metadata"`
		} `yaml:"kubernetes_sd_configs"`
		RelabelConfigs       []map[string]any `yaml:"relabel_configs"`
		MetricRelabelConfigs []map[string]any `yaml:"metric_relabel_configs"`
	} `yaml:"scrape_configs"`
}

// serviceMonitor is what the tests read of servicemonitor.yaml.
type serviceMonitor struct {
	Spec struct {
		Selector struct {
			MatchLabels map[string]string `yaml:"matchLabels"`
		} `yaml:"selector"`
		AttachMetadata struct {
			Node bool `yaml:"node"`
		} `yaml:"attachMetadata"`
		Endpoints []struct {
			Port              string           `yaml:"port"`
			Path              string           `yaml:"path"`
			Relabelings       []map[string]any `yaml:"relabelings"`
			MetricRelabelings []map[string]any `yaml:"metricRelabelings"`
		} `yaml:"endpoints"`
	} `yaml:"spec"`
}

// service is what the tests read of service.yaml.
type service struct {
	document `yaml:",inline"`
	Spec     struct {
		ClusterIP                string            `yaml:"clusterIP"`
		PublishNotReadyAddresses bool              `yaml:"publishNotReadyAddresses"`
		Selector                 map[string]string `yaml:"selector"`
		Ports                    []struct {
			Name       string `yaml:"name"`
			Port       int    `yaml:"port"`
			TargetPort any    `yaml:"targetPort"`
			Protocol   string `yaml:"protocol"`
		} `yaml:"ports"`
	} `yaml:"spec"`
}

// containerPort is a port of a container.
type containerPort struct {
	Name          string `yaml:"name"`
	ContainerPort int    `yaml:"containerPort"`
	Protocol      string `yaml:"protocol"`
}

// container is what the tests read of the agent's container.
type container struct {
	Name string   `yaml:"name"`
	Args []string `yaml:"args"`
	Env  []struct {
		Name      string `yaml:"name"`
		ValueFrom struct {
			FieldRef struct {
				FieldPath string `yaml:"fieldPath"`
			} `yaml:"fieldRef"`
		} `yaml:"valueFrom"`
	} `yaml:"env"`
	Ports          []containerPort `yaml:"ports"`
	ReadinessProbe struct {
		HTTPGet struct {
			Path string `yaml:"path"`
			Port any    `yaml:"port"`
		} `yaml:"httpGet"`
	} `yaml:"readinessProbe"`
	Resources struct {
		Requests map[string]string `yaml:"requests"`
		Limits   map[string]string `yaml:"limits"`
	} `yaml:"resources"`
	SecurityContext securityContext `yaml:"securityContext"`
}

// securityContext holds the fields of a pod's or a container's security
// context that the tests check.
type securityContext struct {
	RunAsNonRoot             *bool `yaml:"runAsNonRoot"`
	RunAsUser                *int  `yaml:"runAsUser"`
	AllowPrivilegeEscalation *bool `yaml:"allowPrivilegeEscalation"`
	ReadOnlyRootFilesystem   *bool `yaml:"readOnlyRootFilesystem"`
	Capabilities             struct {
		Drop []string `yaml:"drop"`
	} `yaml:"capabilities"`
}

// daemonSet is what the tests read of daemonset.yaml.
type daemonSet struct {
	document `yaml:",inline"`
	Spec     struct {
		Selector struct {
			MatchLabels map[string]string `yaml:"matchLabels"`
		} `yaml:"selector"`
		Template struct {
			Metadata struct {
				Labels map[string]string `yaml:"labels"`
			} `yaml:"metadata"`
			Spec struct {
				SecurityContext securityContext `yaml:"securityContext"`
				Containers      []container     `yaml:"containers"`
			} `yaml:"spec"`
		} `yaml:"template"`
	} `yaml:"spec"`
}

// manifests reads the DaemonSet, the Service and the ServiceMonitor, and
// returns them with the agent's container.
func manifests(t *testing.T) (*daemonSet, *service, *serviceMonitor, *container) {
	t.Helper()
	var ds daemonSet
	var svc service
	var sm serviceMonitor
	readYAML(t, "daemonset.yaml", &ds)
	readYAML(t, "service.yaml", &svc)
	readYAML(t, "servicemonitor.yaml", &sm)
	cs := ds.Spec.Template.Spec.Containers
	if len(cs) != 1 {
		t.Fatalf("daemonset.yaml has %d containers; want the agent's", len(cs))
	}
	return &ds, &svc, &sm, &cs[0]
}

// subset reports whether every label of sel is in labels, and sel has
// some.
func subset(sel, labels map[string]string) bool {
	for k, v := range sel {
		if labels[k] != v {
			return false
		}
	}
	return len(sel) > 0
}

// port returns the container's port named name (or numbered so).
func (c *container) port(name any) (containerPort, bool) {
	for _, p := range c.Ports {
		if p.Name == fmt.Sprint(name) || fmt.Sprint(p.ContainerPort) == fmt.Sprint(name) {
			return p, true
		}
	}
	return containerPort{}, false
}

// TestSelectors: the DaemonSet's, the Service's and the ServiceMonitor's
// selectors pick what they should, and the Service's ports are the
// container's.
func TestSelectors(t *testing.T) {
	ds, svc, sm, c := manifests(t)
	pod := ds.Spec.Template.Metadata.Labels
	if !subset(ds.Spec.Selector.MatchLabels, pod) {
		t.Errorf("the DaemonSet's selector %v does not select its pods %v", ds.Spec.Selector.MatchLabels, pod)
	}
	if !subset(svc.Spec.Selector, pod) {
		t.Errorf("the Service's selector %v does not select the agent pods %v", svc.Spec.Selector, pod)
	}
	if !subset(sm.Spec.Selector.MatchLabels, svc.Metadata.Labels) {
		t.Errorf("the ServiceMonitor's selector %v does not select the Service %v", sm.Spec.Selector.MatchLabels, svc.Metadata.Labels)
	}
	if svc.Spec.ClusterIP != "None" || !svc.Spec.PublishNotReadyAddresses {
		t.Errorf("the Service has clusterIP %q, publishNotReadyAddresses %v; want a headless Service (None) that lists not-ready pods", svc.Spec.ClusterIP, svc.Spec.PublishNotReadyAddresses)
	}
	svcPorts := map[string]bool{}
	for _, p := range svc.Spec.Ports {
		svcPorts[p.Name] = true
		cp, ok := c.port(p.TargetPort)
		if !ok || cp.ContainerPort != p.Port || cp.Protocol != p.Protocol {
			t.Errorf("Service port %s (%d/%s) targets %v, container port %+v: want the same number and protocol", p.Name, p.Port, p.Protocol, p.TargetPort, cp)
		}
	}
	if len(sm.Spec.Endpoints) == 0 {
		t.Fatal("the ServiceMonitor has no endpoints")
	}
	for _, e := range sm.Spec.Endpoints {
		if !svcPorts[e.Port] || e.Path != "/metrics" {
			t.Errorf("the ServiceMonitor scrapes port %q, path %q; want a port of the Service (%v) and /metrics", e.Port, e.Path, svcPorts)
		}
		if usesNodeLabels(e.Relabelings) && !sm.Spec.AttachMetadata.Node {
			t.Error("the ServiceMonitor relabels from the nodes' labels without attachMetadata.node: true")
		}
	}
}

// usesNodeLabels reports whether relabellings read a node's labels, which
// Prometheus has only with attach_metadata.
func usesNodeLabels(rs []map[string]any) bool {
	for _, r := range rs {
		if strings.Contains(fmt.Sprint(r["source_labels"], r["sourceLabels"]), "__meta_kubernetes_node_label_") {
			return true
		}
	}
	return false
}

// envRef is a $(NAME) in a container's args: Kubernetes puts the value of
// the container's variable NAME in its place, and leaves it as it is when
// there is none.
var envRef = regexp.MustCompile(`\$\(([A-Za-z_][A-Za-z0-9_]*)\)`)

// agentFlags returns the agent's flags (--name=value) by name, failing t
// on any other form: the test reads every one.
func agentFlags(t *testing.T, c *container) map[string]string {
	t.Helper()
	if len(c.Args) == 0 || c.Args[0] != "agent" {
		t.Fatalf("the container's args %q; want volley's agent command first", c.Args)
	}
	flags := map[string]string{}
	for _, a := range c.Args[1:] {
		name, value, ok := strings.Cut(a, "=")
		if !ok || !strings.HasPrefix(name, "--") {
			t.Errorf("argument %q; want --name=value", a)
			continue
		}
		flags[name] = value
	}
	return flags
}

// listenPort returns the port of a listen address such as :7766.
func listenPort(t *testing.T, flag, addr string) string {
	t.Helper()
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		t.Errorf("%s=%s: %v", flag, addr, err)
	}
	return port
}

// TestAgentArgs: the agent's flags refer to variables the container has,
// name the headless Service for its peers, and listen on the ports the
// container, the Service and the readiness probe use.
func TestAgentArgs(t *testing.T) {
	_, svc, _, c := manifests(t)
	env := map[string]string{}
	for _, e := range c.Env {
		env[e.Name] = e.ValueFrom.FieldRef.FieldPath
	}
	for _, a := range c.Args {
		for _, m := range envRef.FindAllStringSubmatch(a, -1) {
			if _, ok := env[m[1]]; !ok {
				t.Errorf("argument %q uses $(%s), which the container's env does not set", a, m[1])
			}
		}
	}
	flags := agentFlags(t, c)
	if flags["--self"] != "$(POD_IP)" || env["POD_IP"] != "status.podIP" {
		t.Errorf("--self=%s with POD_IP from %q; want the pod's address: --self=$(POD_IP), POD_IP from status.podIP", flags["--self"], env["POD_IP"])
	}
	host, port, err := net.SplitHostPort(flags["--peers-dns"])
	if err != nil {
		t.Fatalf("--peers-dns=%s: %v", flags["--peers-dns"], err)
	}
	if want := svc.Metadata.Name + ".$(POD_NAMESPACE).svc"; host != want || env["POD_NAMESPACE"] != "metadata.namespace" {
		t.Errorf("--peers-dns names %s with POD_NAMESPACE from %q; want the Service's name in the pod's namespace, %s, POD_NAMESPACE from metadata.namespace", host, env["POD_NAMESPACE"], want)
	}
	listen := listenPort(t, "--listen", flags["--listen"])
	if port != listen {
		t.Errorf("--peers-dns probes port %s, --listen listens on %s; want the same", port, listen)
	}
	for _, proto := range []string{"UDP", "TCP"} {
		if !slices.ContainsFunc(c.Ports, func(p containerPort) bool { return fmt.Sprint(p.ContainerPort) == listen && p.Protocol == proto }) {
			t.Errorf("no container port %s/%s for --listen=%s", listen, proto, flags["--listen"])
		}
	}
	metrics := listenPort(t, "--metrics-listen", flags["--metrics-listen"])
	probe := c.ReadinessProbe.HTTPGet
	if p, ok := c.port(probe.Port); !ok || fmt.Sprint(p.ContainerPort) != metrics || probe.Path != "/metrics" {
		t.Errorf("the readiness probe gets port %v (%+v), path %q; want /metrics on --metrics-listen's port %s", probe.Port, p, probe.Path, metrics)
	}
	if p, ok := c.port("metrics"); !ok || fmt.Sprint(p.ContainerPort) != metrics {
		t.Errorf("container port metrics is %+v; want --metrics-listen's port %s", p, metrics)
	}
}

// TestAgentLimits: the agent runs with requests and a memory limit, as a
// user other than root, on a read-only root, without privileges.
func TestAgentLimits(t *testing.T) {
	ds, _, _, c := manifests(t)
	r := c.Resources
	if r.Requests["cpu"] == "" || r.Requests["memory"] == "" || r.Limits["memory"] == "" {
		t.Errorf("resources %+v; want cpu and memory requests and a memory limit", r)
	}
	pod, ctr := ds.Spec.Template.Spec.SecurityContext, c.SecurityContext
	either := func(a, b *bool) bool { return (a != nil && *a) || (b != nil && *b) }
	if !either(pod.RunAsNonRoot, ctr.RunAsNonRoot) {
		t.Error("runAsNonRoot is not set: the agent may run as root")
	}
	if u := cmp.Or(ctr.RunAsUser, pod.RunAsUser); u == nil || *u == 0 {
		t.Error("runAsUser is not a user other than root: an image without a USER would not start with runAsNonRoot")
	}
	if ctr.AllowPrivilegeEscalation == nil || *ctr.AllowPrivilegeEscalation {
		t.Error("allowPrivilegeEscalation is not false")
	}
	if ctr.ReadOnlyRootFilesystem == nil || !*ctr.ReadOnlyRootFilesystem {
		t.Error("readOnlyRootFilesystem is not true")
	}
	if !slices.Equal(ctr.Capabilities.Drop, []string{"ALL"}) {
		t.Errorf("capabilities drop %q; want [ALL]", ctr.Capabilities.Drop)
	}
}

// TestScrapeConfig: the plain scrape job finds the agents' pods by the
// DaemonSet's labels, and keeps the port the agents serve /metrics on.
func TestScrapeConfig(t *testing.T) {
	ds, _, _, c := manifests(t)
	var sc scrapeConfig
	readYAML(t, "scrape-config.yml", &sc)
	if !slices.Contains(sc.RuleFiles, "rules.yml") {
		t.Errorf("rule_files %q; want rules.yml", sc.RuleFiles)
	}
	if len(sc.ScrapeConfigs) != 1 || len(sc.ScrapeConfigs[0].KubernetesSDConfigs) != 1 {
		t.Fatalf("scrape-config.yml has %d jobs; want one, with one kubernetes_sd_configs", len(sc.ScrapeConfigs))
	}
	job := sc.ScrapeConfigs[0]
	sd := job.KubernetesSDConfigs[0]
	if sd.Role != "pod" {
		t.Errorf("role %q; want pod", sd.Role)
	}
	if usesNodeLabels(job.RelabelConfigs) && !sd.AttachMetadata.Node {
		t.Error("the job relabels from the nodes' labels without attach_metadata: {node: true}")
	}
	for _, s := range sd.Selectors {
		sel := map[string]string{}
		for _, kv := range strings.Split(s.Label, ",") {
			k, v, _ := strings.Cut(kv, "=")
			sel[k] = v
		}
		if s.Role != "pod" || !subset(sel, ds.Spec.Template.Metadata.Labels) {
			t.Errorf("selector %+v does not select the agent pods %v", s, ds.Spec.Template.Metadata.Labels)
		}
	}
	kept := ""
	for _, r := range job.RelabelConfigs {
		if r["action"] == "keep" && fmt.Sprint(r["source_labels"]) == "[__meta_kubernetes_pod_container_port_name]" {
			kept, _ = r["regex"].(string)
		}
	}
	if p, ok := c.port(kept); !ok || p.Name != "metrics" {
		t.Errorf("the job keeps container port %q; want the agent's metrics port", kept)
	}
}

// snake turns a ServiceMonitor's field name into Prometheus' one:
// sourceLabels, source_labels.
func snake(s string) string {
	var b strings.Builder
	for _, r := range s {
		if r >= 'A' && r <= 'Z' {
			b.WriteByte('_')
			r += 'a' - 'A'
		}
		b.WriteRune(r)
	}
	return b.String()
}

// relabelConfigs turns a ServiceMonitor's relabelings into Prometheus'
// relabel_configs.
func relabelConfigs(rs []map[string]any) []map[string]any {
	out := make([]map[string]any, 0, len(rs))
	for _, r := range rs {
		m := map[string]any{}
		for k, v := range r {
			m[snake(k)] = v
		}
		out = append(out, m)
	}
	return out
}

// TestPromtoolCheckConfig: promtool checks scrape-config.yml, and the
// rules it loads. A promtool built without Kubernetes discovery (as
// Debian's is) rejects kubernetes_sd_configs: then the test says so, and
// checks the rest, the relabellings, with static_configs in its place.
// The ServiceMonitor's relabelings, as the operator would write them in
// Prometheus' configuration, are checked the same way.
func TestPromtoolCheckConfig(t *testing.T) {
	tool := promtool(t)
	out, err := exec.Command(tool, "check", "config", "scrape-config.yml").CombinedOutput()
	switch {
	case err == nil:
	case bytes.Contains(out, []byte("field kubernetes_sd_configs not found")):
		t.Logf("this promtool has no Kubernetes discovery: checking scrape-config.yml with static_configs instead\n%s", out)
	default:
		t.Fatalf("promtool check config scrape-config.yml: %v\n%s", err, out)
	}
	var cfg map[string]any
	readYAML(t, "scrape-config.yml", &cfg)
	jobs, _ := cfg["scrape_configs"].([]any)
	for _, j := range jobs {
		job, _ := j.(map[string]any)
		delete(job, "kubernetes_sd_configs")
		job["static_configs"] = []any{map[string]any{"targets": []string{"127.0.0.1:9766"}}}
	}
	var sm serviceMonitor
	readYAML(t, "servicemonitor.yaml", &sm)
	for i, e := range sm.Spec.Endpoints {
		jobs = append(jobs, map[string]any{
			"job_name":               fmt.Sprintf("servicemonitor-%d", i),
			"metrics_path":           e.Path,
			"static_configs":         []any{map[string]any{"targets": []string{"127.0.0.1:9766"}}},
			"relabel_configs":        relabelConfigs(e.Relabelings),
			"metric_relabel_configs": relabelConfigs(e.MetricRelabelings),
		})
	}
	cfg["scrape_configs"] = jobs
	dir := t.TempDir()
	rulesPath, err := filepath.Abs("rules.yml")
	if err != nil {
		t.Fatal(err)
	}
	cfg["rule_files"] = []string{rulesPath}
	b, err := yaml.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	out, err = exec.Command(tool, "check", "config", path).CombinedOutput()
	if err != nil {
		t.Fatalf("promtool check config on scrape-config.yml's job with static targets and the ServiceMonitor's: %v\n%s\n%s", err, out, b)
	}
	if !bytes.Contains(out, []byte("SUCCESS: 1 rule files found")) {
		t.Fatalf("promtool check config did not check rules.yml:\n%s", out)
	}
}
