package e2e

import (
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/volley-net/volley/internal/result"
	"github.com/volley-net/volley/internal/testschema"
)

// The client's JSON is read here only, through parseResult and
// parseLines: each checks the output against docs/result.schema.json
// first, so every test that reads JSON checks the published contract too
// (TestJSONOnlyHere keeps it so).

// parseResult reads the client's --format json output, after checking
// it against the schema (a mismatch fails the test, which goes on).
func parseResult(t *testing.T, js string) *result.Result {
	t.Helper()
	if err := testschema.Document([]byte(js)); err != nil {
		t.Errorf("client's JSON: %v\n%s", err, js)
	}
	var res result.Result
	if err := json.Unmarshal([]byte(js), &res); err != nil {
		t.Fatalf("client output is not a JSON result: %v\n%s", err, js)
	}
	return &res
}

// jsonLine is one line of --format jsonl: an interval, or (Type
// "result") the final result.
type jsonLine struct {
	Type     string
	Interval result.Interval
	Result   *result.Result
}

// parseLines reads the client's --format jsonl output, after checking
// every line against the schema, and that one result comes, last.
func parseLines(t *testing.T, out string) []jsonLine {
	t.Helper()
	if err := testschema.Lines([]byte(out)); err != nil {
		t.Errorf("client's JSON lines: %v\n%s", err, out)
	}
	var lines []jsonLine
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		var v struct {
			Type string `json:"type"`
		}
		if err := json.Unmarshal([]byte(l), &v); err != nil {
			t.Fatalf("line %q: %v", l, err)
		}
		line := jsonLine{Type: v.Type}
		var err error
		if v.Type == "result" {
			line.Result = new(result.Result)
			err = json.Unmarshal([]byte(l), line.Result)
		} else {
			err = json.Unmarshal([]byte(l), &line.Interval)
		}
		if err != nil {
			t.Fatalf("line %q: %v", l, err)
		}
		lines = append(lines, line)
	}
	return lines
}

// TestJSONOnlyHere: no other e2e file decodes JSON itself, so that no
// test reads the client's JSON without checking it against the schema.
// A test that reads other JSON (not the client's result) decodes it in
// this file, in a helper of its own.
func TestJSONOnlyHere(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil || len(files) == 0 {
		t.Fatalf("no Go files in e2e (%v)", err)
	}
	fset := token.NewFileSet()
	for _, name := range files {
		if name == "json_test.go" {
			continue
		}
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		f, err := parser.ParseFile(fset, name, src, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			if pkg, ok := sel.X.(*ast.Ident); ok && pkg.Name == "json" {
				switch sel.Sel.Name {
				case "Unmarshal", "NewDecoder", "Valid":
					t.Errorf("%s: json.%s: read the client's JSON with parseResult or parseLines (json_test.go), which check it against docs/result.schema.json",
						fset.Position(sel.Pos()), sel.Sel.Name)
				}
			}
			return true
		})
	}
}

// onceOut is one target's entry of volley monitor --once --format json.
type onceOut struct {
	Target string
	Result *result.Result // checked against the schema
	Error  string
}

// parseOnce reads volley monitor --once --format json: an array of
// targets, each result checked against the schema as parseResult does.
func parseOnce(t *testing.T, js string) []onceOut {
	t.Helper()
	var raw []struct {
		Target string          `json:"target"`
		Result json.RawMessage `json:"result"`
		Error  string          `json:"error"`
	}
	if err := json.Unmarshal([]byte(js), &raw); err != nil {
		t.Fatalf("volley monitor --once: not a JSON array: %v\n%s", err, js)
	}
	out := make([]onceOut, len(raw))
	for i, r := range raw {
		out[i] = onceOut{Target: r.Target, Error: r.Error}
		if len(r.Result) > 0 {
			out[i].Result = parseResult(t, string(r.Result))
		}
	}
	return out
}

// targetLine is one line of volley monitor --format jsonl.
type targetLine struct {
	Type   string            `json:"type"`
	Target string            `json:"target"`
	Labels map[string]string `json:"labels"`
	Counts result.Counts     `json:"counts"`
}

// parseTargetLine reads one line of volley monitor --format jsonl; its
// interval, without the target's name and labels, is checked against the
// schema as parseLines checks the client's.
func parseTargetLine(t *testing.T, l string) targetLine {
	t.Helper()
	var tl targetLine
	if err := json.Unmarshal([]byte(l), &tl); err != nil {
		t.Fatalf("line %q: %v", l, err)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal([]byte(l), &m); err != nil {
		t.Fatalf("line %q: %v", l, err)
	}
	delete(m, "target")
	delete(m, "labels")
	iv, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	c, err := testschema.Published()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Line(iv); err != nil {
		t.Errorf("volley monitor's JSON line: %v\n%s", err, l)
	}
	return tl
}

// decodeJSON decodes other JSON than volley's (Prometheus' HTTP API).
func decodeJSON(r io.Reader, v any) error { return json.NewDecoder(r).Decode(v) }
