// Package testschema checks volley's JSON output against the published
// JSON Schema, docs/result.schema.json, for tests: the golden files and
// fresh reports of internal/report, and every document and JSON line the
// end-to-end tests get from the real binary. The schema is strict (no
// field it does not list), so output that gains a field the schema lacks
// fails here; Unseen finds the fields the schema lists that golden files
// lack.
package testschema

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"

	"github.com/volley-net/volley/docs"
)

// url names the schema inside the compiler; nothing is fetched.
const url = "https://volley.invalid/result.schema.json"

// lineDef is where in the schema one --format jsonl line is described.
const lineDef = "jsonl_line"

// Checker checks documents and JSON lines against one schema.
type Checker struct {
	doc, line *jsonschema.Schema
	raw       map[string]any // the schema as JSON, for Unseen
}

// New compiles schema, a JSON Schema (draft 2020-12) laid out as
// docs/result.schema.json is; it fails if schema is not valid JSON Schema.
func New(schema []byte) (*Checker, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schema))
	if err != nil {
		return nil, fmt.Errorf("read the schema: %w", err)
	}
	raw, ok := doc.(map[string]any)
	if !ok {
		return nil, errors.New("the schema is not a JSON object")
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	if err := c.AddResource(url, doc); err != nil {
		return nil, err
	}
	ch := &Checker{raw: raw}
	if ch.doc, err = c.Compile(url); err != nil {
		return nil, fmt.Errorf("compile the schema: %w", err)
	}
	if ch.line, err = c.Compile(url + "#/$defs/" + lineDef); err != nil {
		return nil, fmt.Errorf("compile the schema's #/$defs/%s: %w", lineDef, err)
	}
	return ch, nil
}

// published is docs/result.schema.json, compiled once.
var published = sync.OnceValues(func() (*Checker, error) { return New(docs.ResultSchema) })

// Published returns the checker of docs/result.schema.json.
func Published() (*Checker, error) { return published() }

// Document checks one --format json document against
// docs/result.schema.json.
func Document(data []byte) error {
	c, err := published()
	if err != nil {
		return err
	}
	return c.Document(data)
}

// Lines checks the whole output of --format jsonl against
// docs/result.schema.json.
func Lines(data []byte) error {
	c, err := published()
	if err != nil {
		return err
	}
	return c.Lines(data)
}

// Document checks one --format json document.
func (c *Checker) Document(data []byte) error { return validate(c.doc, data) }

// Line checks one --format jsonl line.
func (c *Checker) Line(line []byte) error { return validate(c.line, line) }

// Lines checks the whole output of --format jsonl: each line valid, and
// one "result" line, the last.
func (c *Checker) Lines(data []byte) error {
	text := strings.TrimSuffix(string(data), "\n")
	if text == "" {
		return errors.New("no JSON lines")
	}
	lines := strings.Split(text, "\n")
	for i, l := range lines {
		if err := c.Line([]byte(l)); err != nil {
			return fmt.Errorf("line %d: %w", i+1, err)
		}
		var v struct {
			Type string `json:"type"`
		}
		if err := json.Unmarshal([]byte(l), &v); err != nil {
			return fmt.Errorf("line %d: %w", i+1, err)
		}
		if last := i == len(lines)-1; (v.Type == "result") != last {
			if last {
				return fmt.Errorf("line %d, the last, is a %q line, not the result", i+1, v.Type)
			}
			return fmt.Errorf("line %d is the result, but %d lines follow it", i+1, len(lines)-1-i)
		}
	}
	return nil
}

var printer = message.NewPrinter(language.English)

func validate(s *jsonschema.Schema, data []byte) error {
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		return fmt.Errorf("not one JSON value: %w", err)
	}
	err = s.Validate(v)
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return err
	}
	var found, unknown []string
	var failedAt []string // instance locations of found
	var leaves func(e *jsonschema.ValidationError)
	leaves = func(e *jsonschema.ValidationError) {
		if len(e.Causes) > 0 {
			for _, c := range e.Causes {
				leaves(c)
			}
			return
		}
		at := "/" + strings.Join(e.InstanceLocation, "/")
		if _, ok := e.ErrorKind.(*kind.FalseSchema); ok && strings.HasSuffix(e.SchemaURL, "/unevaluatedProperties") {
			unknown = append(unknown, at+": a field the schema does not list")
			return
		}
		where := e.SchemaURL
		if i := strings.Index(where, "#"); i >= 0 {
			where = where[i:]
		}
		found = append(found, fmt.Sprintf("%s: %s (%s)", at, e.ErrorKind.LocalizedString(printer), where))
		failedAt = append(failedAt, at)
	}
	leaves(ve)
	// When a field of a result or an interval fails, the schema counts all
	// its siblings unevaluated too: list a field as unknown only where
	// nothing else failed in its object.
	for _, u := range unknown {
		parent := u[:strings.LastIndex(u[:strings.Index(u, ": ")], "/")+1]
		noise := false
		for _, f := range failedAt {
			noise = noise || strings.HasPrefix(f+"/", parent)
		}
		if !noise {
			found = append(found, u)
		}
	}
	sort.Strings(found)
	return fmt.Errorf("does not match the schema (docs/result.schema.json):\n\t%s", strings.Join(found, "\n\t"))
}
