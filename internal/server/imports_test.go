package server

import (
	"os/exec"
	"strings"
	"testing"
)

// TestImports: the server runs reflectors and tells its caller; it knows
// neither the command line (cli, cobra) nor how its caller writes what it
// hears (report), even through another package.
func TestImports(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	deps := strings.Fields(string(out))
	if len(deps) < 10 {
		t.Fatalf("go list -deps showed %d packages; the rule checked nothing", len(deps))
	}
	for _, d := range deps {
		for _, bad := range []string{"github.com/volley-net/volley/internal/cli", "github.com/volley-net/volley/internal/report", "github.com/spf13"} {
			if d == bad || strings.HasPrefix(d, bad+"/") {
				t.Errorf("internal/server depends on %s", d)
			}
		}
	}
}
