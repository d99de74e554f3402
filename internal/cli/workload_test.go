package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/volley-net/volley/internal/result"
)

// TestWorkloadExamples: each example workload runs against the
// in-process reflector on loopback, and the report breaks the run down
// by the example's entries.
func TestWorkloadExamples(t *testing.T) {
	files, err := filepath.Glob("../../examples/workload.*")
	if err != nil || len(files) < 2 {
		t.Fatalf("examples/workload.*: %v, %v; want the YAML and the JSON example", files, err)
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			const n = 40
			var stdout, stderr bytes.Buffer
			args := []string{"client", "--workload", file, "--seed", "1", "-n", strconv.Itoa(n), "-i", "0", "--format", "json", "-q"}
			if code := Main(context.Background(), args, &stdout, &stderr); code != ExitOK {
				t.Fatalf("Main(%q) = %d, stderr %q", args, code, stderr.String())
			}
			var res result.Result
			if err := json.Unmarshal(stdout.Bytes(), &res); err != nil {
				t.Fatalf("Main(%q): %v in %q", args, err, stdout.String())
			}
			var sent uint64
			names := map[string]bool{}
			for _, e := range res.Workload {
				sent += e.Sent
				names[e.Name] = true
			}
			if len(res.Workload) < 2 || sent != n || names["entry 1"] {
				t.Fatalf("Main(%q): workload %+v; want the example's named entries, %d probes sent among them", args, res.Workload, n)
			}
		})
	}
}
