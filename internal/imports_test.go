// Package internal_test holds the rules of the module's layout: which
// package may import what (this file), and how long a file or a function
// may grow (size_test.go).
package internal_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/volley-net/volley/"

// outsideStd, as a rule's ban, bans every package outside the standard
// library.
const outsideStd = "(outside the standard library)"

// testOnly are the packages only tests may import: helpers that must not
// end up in a binary. They may use each other.
var testOnly = []string{
	"internal/testconn",
	"internal/testenv",
	"internal/testrelay",
	"internal/testschema",
	"internal/testsock",
}

// A rule bans an import from some of the module's packages.
type rule struct {
	// pkgs are the packages bound, relative to the module: a path, "P/*"
	// (every package below P, not P) or "..." (every package).
	pkgs string
	// except are packages of pkgs that are not bound (paths).
	except []string
	// ban is an import path; a prefix when it ends in "/"; or outsideStd.
	ban string
	// transitive: the ban holds for every package the bound package
	// depends on (go list -deps), not only for its own imports.
	transitive bool
	reason     string
}

// rules is the table of bans, checked for each GOOS in goosList.
var rules = []rule{
	// wire: the packet format, shared by every side and fuzzed alone.
	// (Direct: fmt and errors reach os and time themselves.)
	{"internal/wire", nil, "net", false, "wire is pure encoding: it never touches the network"},
	{"internal/wire", nil, "net/netip", false, "wire is pure encoding: addresses are the caller's"},
	{"internal/wire", nil, "time", false, "wire is pure encoding: times are integers the caller reads from its clock"},
	{"internal/wire", nil, "os", false, "wire is pure encoding: no files, no environment"},
	{"internal/wire", nil, "log", false, "wire returns errors and never logs"},
	{"internal/wire", nil, "log/slog", false, "wire returns errors and never logs"},
	{"internal/wire", nil, "encoding/json", false, "wire's layouts are fixed binary ones, drawn in its doc comment (the one-way results too)"},
	{"internal/wire", nil, module, false, "wire is the bottom layer: it depends on nothing of volley's"},
	{"internal/wire", nil, outsideStd, true, "wire uses only the standard library, so it builds anywhere and is fuzzed alone"},

	// stamp: STAMP's packets and its Session-Reflector, pure like wire.
	{"internal/stamp", nil, "net", false, "stamp is pure encoding: it never touches the network (addresses are net/netip values)"},
	{"internal/stamp", nil, "time", false, "stamp is pure encoding: times are integers the caller reads from its clock"},
	{"internal/stamp", nil, "os", false, "stamp is pure encoding: no files, no environment"},
	{"internal/stamp", nil, "log", false, "stamp returns errors and never logs"},
	{"internal/stamp", nil, "log/slog", false, "stamp returns errors and never logs"},
	{"internal/stamp", nil, module, false, "stamp depends on nothing of volley's: the server and the client adapt it"},
	{"internal/stamp", nil, outsideStd, true, "stamp uses only the standard library, so it builds anywhere and is fuzzed alone"},

	// stats, result, clock, report: pure code over the result model.
	{"internal/stats", nil, "net", false, "stats is pure arithmetic over delays: no I/O"},
	{"internal/stats", nil, "os", false, "stats is pure arithmetic over delays: no I/O"},
	{"internal/stats", nil, module + "internal/transport", true, "stats knows nothing of how packets travel"},
	{"internal/result", nil, "net", false, "result is a data model: no I/O"},
	{"internal/result", nil, "os", false, "result is a data model: no I/O"},
	{"internal/result", nil, module, false, "result is the contract every package shares: it depends on none of them"},
	{"internal/result", nil, outsideStd, true, "result uses only the standard library: the JSON contract has no dependency"},
	{"internal/clock", nil, module, false, "the clock is a leaf every package may use"},
	{"internal/clock", nil, outsideStd, true, "the clock uses only the standard library"},
	{"internal/report", nil, "net", false, "reports write results: they never touch the network"},
	{"internal/report", nil, module + "internal/transport", true, "reports are made from a result.Result alone (a run's or a saved one)"},
	{"internal/report", nil, module + "internal/client", true, "reports are made from a result.Result alone (a run's or a saved one)"},
	{"internal/report", nil, module + "internal/reflector", true, "reports are made from a result.Result alone (a run's or a saved one)"},

	// chart: plots and the HTML report, from results alone.
	{"internal/chart", nil, "net", false, "chart draws results: it never touches the network"},
	{"internal/chart", nil, module + "internal/client", true, "plots are made from a result.Result and its probes alone (a run's or a saved one)"},
	{"...", []string{"internal/chart"}, "gonum.org/", false, "the plotting library stays in the one package that draws"},

	// exporter: the Prometheus client library stays behind it.
	{"...", []string{"internal/exporter"}, "github.com/prometheus/", false, "only exporter imports prometheus: the Prometheus client library stays in the one package that exports metrics"},

	// cli: flags to a Config, and the choice of writers.
	{"internal/cli", nil, module + "internal/wire", false, "cli turns flags into Configs: the packet format is the client's and the reflector's business"},
	{"internal/cli", nil, module + "internal/stats", false, "cli reports through internal/report: the statistics are the client's and report's business"},
	{"...", []string{"cmd/volley"}, module + "internal/cli", false, "cli is the command line: only main uses it; a library user calls client and reflector"},

	// transport: moves bytes, for any protocol.
	{"internal/server", nil, module + "internal/cli", true, "the server runs reflectors and tells its caller; the command line is the caller's"},
	{"internal/server", nil, module + "internal/report", true, "the server hands its figures to a Handler; how they are written is the caller's"},
	{"internal/server", nil, "github.com/spf13/", true, "the server knows no command line library"},
	{"internal/transport", nil, module + "internal/wire", true, "transport moves bytes: it does not know the packet format"},
	{"internal/transport", nil, module + "internal/result", true, "transport moves bytes: it does not know the result model"},
	{"internal/transport/*", nil, module + "internal/transport/", true, "each transport stands alone, chosen by internal/transport's dial and listen; code two of them need goes in a package of its own"},
	{"...", []string{"internal/transport/dbus"}, "github.com/godbus/", false, "the D-Bus library stays in the one transport that needs it"},

	// saved: reading results back from files.
	{"internal/saved", nil, "net", false, "saved reads files: it never touches the network"},
	{"internal/saved", nil, module + "internal/transport", false, "saved reads results from files: how packets travel is not its business"},

	// Test helpers stay out of the binaries.
	{"...", testOnly, module + "internal/testconn", true, "a test helper (the fake client connection) must not end up in a binary"},
	{"...", testOnly, module + "internal/testenv", true, "a test helper (skip or fail on a missing component) must not end up in a binary"},
	{"...", testOnly, module + "internal/testrelay", true, "a test helper (the lossy relay) must not end up in a binary"},
	{"...", testOnly, module + "internal/testschema", true, "a test helper (the JSON Schema validator) must not end up in a binary"},
	{"...", testOnly, module + "internal/testsock", true, "a test helper (socket tricks) must not end up in a binary"},
	{"...", testOnly, "github.com/santhosh-tekuri/", true, "the schema validator is for tests: not in a binary"},
}

// goosList are the systems the rules are checked for: a ban may be broken
// in a file built for one of them only.
var goosList = []string{"linux", "darwin", "windows"}

// pkg is what go list says of a package.
type pkg struct {
	ImportPath string
	Imports    []string
	Standard   bool
	DepOnly    bool
}

func TestImportRules(t *testing.T) {
	for _, goos := range goosList {
		t.Run(goos, func(t *testing.T) {
			pkgs, err := listDeps(goos)
			if err != nil {
				t.Skipf("skipping: go list for GOOS=%s: %v", goos, err)
			}
			for _, v := range violations(pkgs) {
				t.Error(v)
			}
		})
	}
}

// listDeps lists the module's packages built for goos, and every package
// they depend on.
func listDeps(goos string) (map[string]*pkg, error) {
	cmd := exec.Command("go", "list", "-deps", "-json=ImportPath,Imports,Standard,DepOnly", "../...")
	cmd.Env = append(os.Environ(), "GOOS="+goos, "GOARCH=amd64", "CGO_ENABLED=0")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("%w: %s", err, strings.TrimSpace(stderr.String()))
	}
	pkgs := map[string]*pkg{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p pkg
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			return pkgs, nil
		} else if err != nil {
			return nil, fmt.Errorf("decode go list: %w", err)
		}
		pkgs[p.ImportPath] = &p
	}
}

// violations checks every rule on the module's packages in pkgs, and
// returns what breaks them, one line each.
func violations(pkgs map[string]*pkg) []string {
	var own []*pkg
	for _, p := range pkgs {
		if !p.DepOnly && strings.HasPrefix(p.ImportPath, module) {
			own = append(own, p)
		}
	}
	slices.SortFunc(own, func(a, b *pkg) int { return strings.Compare(a.ImportPath, b.ImportPath) })
	if len(own) < 10 {
		return []string{fmt.Sprintf("go list showed %d of the module's packages, want more: the rules checked nothing", len(own))}
	}
	var out []string
	for _, r := range rules {
		bound := 0
		for _, p := range own {
			rel := strings.TrimPrefix(p.ImportPath, module)
			if !r.binds(rel) {
				continue
			}
			bound++
			if !r.transitive {
				for _, imp := range p.Imports {
					if r.bans(pkgs, imp) {
						out = append(out, fmt.Sprintf("%s imports %s: %s", rel, strings.TrimPrefix(imp, module), r.reason))
					}
				}
				continue
			}
			all := deps(pkgs, p.ImportPath)
			for _, dep := range slices.Sorted(maps.Keys(all)) {
				if path := all[dep]; r.bans(pkgs, dep) {
					out = append(out, fmt.Sprintf("%s depends on %s through %s: %s", rel, strings.TrimPrefix(dep, module), strings.Join(path, " → "), r.reason))
				}
			}
		}
		if bound == 0 {
			out = append(out, fmt.Sprintf("rule for %q bans %q from no package: want a rule for packages that exist", r.pkgs, r.ban))
		}
	}
	return out
}

// binds reports whether r holds for the package at rel.
func (r rule) binds(rel string) bool {
	if slices.Contains(r.except, rel) {
		return false
	}
	switch {
	case r.pkgs == "...":
		return true
	case strings.HasSuffix(r.pkgs, "/*"):
		return strings.HasPrefix(rel, strings.TrimSuffix(r.pkgs, "*"))
	}
	return rel == r.pkgs
}

// bans reports whether r bans the package imp.
func (r rule) bans(pkgs map[string]*pkg, imp string) bool {
	switch {
	case r.ban == outsideStd:
		p, ok := pkgs[imp]
		return !ok || !p.Standard
	case strings.HasSuffix(r.ban, "/"):
		return strings.HasPrefix(imp, r.ban)
	}
	return imp == r.ban
}

// deps returns every package root depends on, each with the shortest
// chain of imports from root that brings it in (root first).
func deps(pkgs map[string]*pkg, root string) map[string][]string {
	from := map[string]string{root: ""}
	queue := []string{root}
	for len(queue) > 0 {
		cur := queue[0]
		queue = queue[1:]
		p, ok := pkgs[cur]
		if !ok {
			continue
		}
		for _, imp := range p.Imports {
			if _, seen := from[imp]; !seen {
				from[imp] = cur
				queue = append(queue, imp)
			}
		}
	}
	out := make(map[string][]string, len(from))
	for dep := range from {
		if dep == root {
			continue
		}
		var path []string
		for p := dep; p != ""; p = from[p] {
			path = append(path, strings.TrimPrefix(p, module))
		}
		slices.Reverse(path)
		out[dep] = path
	}
	return out
}

// TestImportRulesCatch: the check finds a banned import, direct or
// through a chain of imports (and names the chain), on a made-up module.
func TestImportRulesCatch(t *testing.T) {
	pkgs := map[string]*pkg{}
	add := func(path string, std bool, imports ...string) {
		pkgs[path] = &pkg{ImportPath: path, Imports: imports, Standard: std, DepOnly: !strings.HasPrefix(path, module)}
	}
	for _, std := range []string{"fmt", "net", "os", "time"} {
		add(std, true)
	}
	add("example.com/lib", false)
	add(module+"internal/wire", false, "fmt", "net")
	add(module+"internal/result", false, "example.com/lib")
	add(module+"internal/stats", false, module+"internal/result")
	add(module+"internal/report", false, module+"internal/stats", module+"internal/client")
	add(module+"internal/client", false, module+"internal/testconn", module+"internal/wire")
	add(module+"internal/testconn", false, module+"internal/wire")
	add(module+"internal/transport", false, module+"internal/transport/udp")
	add(module+"internal/transport/udp", false, module+"internal/transport/tcp")
	add(module+"internal/transport/tcp", false)
	add(module+"internal/cli", false, module+"internal/report")
	add(module+"cmd/volley", false, module+"internal/cli")
	got := violations(pkgs)
	for _, want := range []string{
		"internal/wire imports net: ",
		"internal/result depends on example.com/lib through internal/result → example.com/lib: ",
		"internal/report depends on internal/client through internal/report → internal/client: ",
		"internal/report depends on internal/testconn through internal/report → internal/client → internal/testconn: ",
		"internal/transport/udp depends on internal/transport/tcp through internal/transport/udp → internal/transport/tcp: ",
		"internal/cli depends on internal/testconn through internal/cli → internal/report → internal/client → internal/testconn: ",
	} {
		if !slices.ContainsFunc(got, func(v string) bool { return strings.HasPrefix(v, want) }) {
			t.Errorf("violations() = %q, want one starting %q", got, want)
		}
	}
	for _, v := range got {
		if strings.HasPrefix(v, "cmd/volley imports internal/cli") || strings.HasPrefix(v, "internal/testconn depends on internal/testconn") {
			t.Errorf("violations() has %q, want cmd/volley free to import cli, and a package not its own dependency", v)
		}
	}
}
