package report

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/volley-net/volley/docs"
	"github.com/volley-net/volley/internal/result"
	"github.com/volley-net/volley/internal/testschema"
)

// jsonGoldens are the golden documents (--format json) and JSON lines.
var (
	jsonGoldens  = []string{"result.json", "stamps.json", "oneway.json", "tcp.json", "peer-stamp.json", "peer-connect.json", "peer-echo.json", "path.json", "path-unknown.json", "load.json"}
	jsonlGoldens = []string{"result.jsonl"}
)

// fixtures are every result the golden files are made from.
func fixtures() map[string]*result.Result {
	return map[string]*result.Result{
		"default": fixture(), "user stamps": userFixture(), "stamped": stampedFixture(),
		"oneway": onewayFixture(), "tcp": tcpFixture(),
		"stamp peer": stampPeerFixture(), "connect peer": connectFixture(), "echo peer": echoFixture(),
		"path": pathFixtures()["path.json"], "load": loadFixture(),
	}
}

func readGolden(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestSchemaGolden: the golden files, the JSON contract, are valid
// against the published schema.
func TestSchemaGolden(t *testing.T) {
	for _, name := range jsonGoldens {
		if err := testschema.Document(readGolden(t, name)); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	for _, name := range jsonlGoldens {
		if err := testschema.Lines(readGolden(t, name)); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// TestSchemaCoverage: together, the golden files hold every field the
// schema describes. With the schema's strictness (no field it does not
// list), the golden files and the schema show the same fields: a field
// added to the code must be added to both.
func TestSchemaCoverage(t *testing.T) {
	c, err := testschema.Published()
	if err != nil {
		t.Fatal(err)
	}
	var documents, lines [][]byte
	for _, name := range jsonGoldens {
		documents = append(documents, readGolden(t, name))
	}
	for _, name := range jsonlGoldens {
		for _, l := range strings.Split(strings.TrimSpace(string(readGolden(t, name))), "\n") {
			lines = append(lines, []byte(l))
		}
	}
	unseen, err := c.Unseen(documents, lines)
	if err != nil {
		t.Fatal(err)
	}
	if len(unseen) > 0 {
		t.Errorf("no golden file under testdata/ holds these fields of docs/result.schema.json: %s (set them in a fixture and run go test -update)",
			strings.Join(unseen, ", "))
	}
}

// TestSchemaFresh: what the writers produce now, every format and every
// fixture, is valid: the document of WriteJSON and of a JSONStream over
// a run, and WriteJSONL's lines.
func TestSchemaFresh(t *testing.T) {
	all := fixtures()
	noIntervals := fixture()
	noIntervals.Intervals = nil // -i 0, or a run that streamed them
	all["no intervals"] = noIntervals
	for name, res := range all {
		t.Run(name, func(t *testing.T) {
			var b bytes.Buffer
			if err := WriteJSON(&b, res); err != nil {
				t.Fatal(err)
			}
			if err := testschema.Document(b.Bytes()); err != nil {
				t.Errorf("WriteJSON: %v", err)
			}
			b.Reset()
			s := NewJSONStream(&b)
			opening := *res
			opening.Intervals, opening.Summary = nil, result.Interval{}
			if err := s.Begin(&opening); err != nil {
				t.Fatal(err)
			}
			for _, iv := range res.Intervals {
				if err := s.Interval(iv); err != nil {
					t.Fatal(err)
				}
			}
			final := *res
			final.Intervals = nil
			if err := s.End(&final); err != nil {
				t.Fatal(err)
			}
			if err := testschema.Document(b.Bytes()); err != nil {
				t.Errorf("JSONStream: %v", err)
			}
			b.Reset()
			if err := WriteJSONL(&b, res); err != nil {
				t.Fatal(err)
			}
			if err := testschema.Lines(b.Bytes()); err != nil {
				t.Errorf("WriteJSONL: %v", err)
			}
		})
	}
}

// TestSchemaStrict: a field the schema does not list fails, at every
// level, in the document and in the JSON lines.
func TestSchemaStrict(t *testing.T) {
	var doc bytes.Buffer
	if err := WriteJSON(&doc, fixture()); err != nil {
		t.Fatal(err)
	}
	var lines bytes.Buffer
	if err := WriteJSONL(&lines, fixture()); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name, in, old, new, want string
		jsonl                    bool
	}{
		{"top level", doc.String(), `"stopped": "duration",`, `"stopped": "duration", "new": 1,`, "/new: a field the schema does not list", false},
		{"config", doc.String(), `"parallel": 1,`, `"parallel": 1, "new": 1,`, "/config: additional properties 'new' not allowed", false},
		{"socket", doc.String(), `"ttl": 64`, `"ttl": 64, "new": 1`, "/config/socket: additional properties 'new' not allowed", false},
		{"interval", doc.String(), `"start_ns": 0,`, `"start_ns": 0, "new": 1,`, "/intervals/0/new: a field the schema does not list", false},
		{"kernel", doc.String(), `"kernel": {`, `"kernel": {"new": 1,`, "/intervals/0/kernel: additional properties 'new' not allowed", false},
		{"latency", doc.String(), `"count": 1000,`, `"count": 1000, "new": 1,`, "/intervals/0/rtt: additional properties 'new' not allowed", false},
		{"clock offset", doc.String(), `"offset_ns": -666,`, `"offset_ns": -666, "new": 1,`, "/clock_offset: additional properties 'new' not allowed", false},
		{"drift", doc.String(), `"ppm": 0.8,`, `"ppm": 0.8, "new": 1,`, "/clock_offset/drift: additional properties 'new' not allowed", false},
		{"clock method", doc.String(), `"method": "estimate",`, `"method": "guess",`, "/clock_offset/method", false},
		{"missing field", doc.String(), `"reflector_count": "partial",`, ``, "missing property 'reflector_count'", false},
		{"wrong type", doc.String(), `"schema_version": 2`, `"schema_version": "2"`, "/schema_version: value must be 2", false},
		{"jsonl interval", lines.String(), `{"type":"interval",`, `{"type":"interval","new":1,`, "line 1: does not match", true},
		{"jsonl result", lines.String(), `{"type":"result",`, `{"type":"result","new":1,`, "/new: a field the schema does not list", true},
		{"jsonl result with intervals", lines.String(), `"intervals":null`, `"intervals":[]`, "/intervals: got array, want null", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			in := strings.Replace(tt.in, tt.old, tt.new, 1)
			if in == tt.in {
				t.Fatalf("%q is not in the output", tt.old)
			}
			check := testschema.Document
			if tt.jsonl {
				check = testschema.Lines
			}
			if err := check([]byte(in)); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got %v, want an error with %q", err, tt.want)
			}
		})
	}
}

// TestSchemaStale: a schema written from the stale golden file, which
// lacked clock_offset, config.socket and intervals[].kernel, fails on
// what a default run emits, and names those fields.
func TestSchemaStale(t *testing.T) {
	var schema map[string]any
	if err := json.Unmarshal(docs.ResultSchema, &schema); err != nil {
		t.Fatal(err)
	}
	defs := schema["$defs"].(map[string]any)
	for def, field := range map[string]string{"result_fields": "clock_offset", "config": "socket", "interval_fields": "kernel"} {
		delete(defs[def].(map[string]any)["properties"].(map[string]any), field)
	}
	stale, err := json.Marshal(schema)
	if err != nil {
		t.Fatal(err)
	}
	c, err := testschema.New(stale)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := WriteJSON(&b, fixture()); err != nil {
		t.Fatal(err)
	}
	err = c.Document(b.Bytes())
	if err == nil {
		t.Fatal("a default run's document passes the stale schema")
	}
	// Config fails by itself (additionalProperties), which hides the
	// fields unevaluated beside it (clock_offset); the interval's kernel
	// fails inside intervals.
	for _, want := range []string{"/config: additional properties 'socket' not allowed", "/intervals/0/kernel: a field the schema does not list"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("stale schema: %v\nwant it to name %q", err, want)
		}
	}
}
