package internal_test

import (
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// layers reads the package map of docs/ARCHITECTURE.md: the packages in
// the order of its list, top first. An indented entry ("  udp/") is a
// package below the last unindented one.
func layers(t *testing.T) []string {
	t.Helper()
	doc, err := os.ReadFile("../docs/ARCHITECTURE.md")
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(doc), "## The package map")
	if !ok {
		t.Fatal(`docs/ARCHITECTURE.md has no "## The package map"`)
	}
	_, block, _ := strings.Cut(after, "```\n")
	block, _, _ = strings.Cut(block, "```")
	var order []string
	parent := ""
	for _, line := range strings.Split(block, "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || !strings.HasSuffix(f[0], "/") {
			continue
		}
		name := strings.TrimSuffix(f[0], "/")
		if strings.HasPrefix(line, " ") {
			name = parent + "/" + name
		} else {
			parent = name
		}
		order = append(order, name)
	}
	if len(order) < 10 {
		t.Fatalf("the package map lists %d packages: %q", len(order), order)
	}
	return order
}

// TestLayers: every package of cmd/ and internal/ is in the package map
// of docs/ARCHITECTURE.md, and imports only packages listed below it, so
// that the map a newcomer reads first is the one the code keeps. The
// test-only packages are exempt as importers: they stand in for what
// they test.
func TestLayers(t *testing.T) {
	order := layers(t)
	rank := map[string]int{}
	for i, p := range order {
		rank[p] = i
	}
	out, err := exec.Command("go", "list", "-json", "../...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	seen := 0
	for {
		var p struct {
			ImportPath string
			Imports    []string
		}
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		rel := strings.TrimPrefix(p.ImportPath, module)
		if !strings.HasPrefix(rel, "internal/") && !strings.HasPrefix(rel, "cmd/") {
			continue // e2e, bench, docs: not layers of the binary
		}
		seen++
		r, ok := rank[rel]
		if !ok {
			t.Errorf("%s is not in docs/ARCHITECTURE.md's package map: add it, with its one job", rel)
			continue
		}
		if strings.HasPrefix(rel, "internal/test") {
			continue
		}
		for _, imp := range p.Imports {
			dep, ok := strings.CutPrefix(imp, module)
			if !ok {
				continue
			}
			if d, listed := rank[dep]; listed && d <= r {
				t.Errorf("%s imports %s, which docs/ARCHITECTURE.md's package map lists above it: imports point down the map", rel, dep)
			}
		}
	}
	if seen < 10 {
		t.Fatalf("go list showed %d packages of cmd/ and internal/; the rule checked nothing", seen)
	}
}
