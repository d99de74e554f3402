// Package internal_test holds the rules on which package may import what.
package internal_test

import (
	"encoding/json"
	"io"
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/volley-net/volley/"

// forbidden maps a package (relative to the module) to imports it must not
// have, directly.
var forbidden = map[string][]string{
	"internal/wire":   {"net", "net/netip", "time", "os", "log", "log/slog", module},
	"internal/stats":  {"net", "os", module + "internal/transport"},
	"internal/result": {"net", "os", module},
	"internal/report": {"net", module + "internal/transport", module + "internal/client", module + "internal/reflector"},
	"internal/clock":  {module},
}

func TestImportRules(t *testing.T) {
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
		seen++
		rel := strings.TrimPrefix(p.ImportPath, module)
		for _, imp := range p.Imports {
			if imp == module+"internal/cli" && rel != "cmd/volley" {
				t.Errorf("%s imports internal/cli: only cmd/volley may", rel)
			}
			// The schema validator is for tests: not in the binary.
			if (imp == module+"internal/testschema" || strings.HasPrefix(imp, "github.com/santhosh-tekuri/")) && rel != "internal/testschema" {
				t.Errorf("%s imports %s: only tests may", rel, imp)
			}
			if strings.HasPrefix(imp, "github.com/godbus/") && rel != "internal/transport/dbus" {
				t.Errorf("%s imports %s: only internal/transport/dbus may", rel, imp)
			}
			// Transports below internal/transport never import each other.
			if strings.HasPrefix(rel, "internal/transport/") && strings.HasPrefix(imp, module+"internal/transport/") {
				t.Errorf("%s imports its sibling %s", rel, imp)
			}
			for _, bad := range forbidden[rel] {
				if imp == bad || (strings.HasSuffix(bad, "/") && strings.HasPrefix(imp, bad)) {
					t.Errorf("%s imports %s, which it must not", rel, imp)
				}
			}
		}
	}
	if seen < 10 {
		t.Fatalf("go list showed %d packages; the rules checked nothing", seen)
	}
}
