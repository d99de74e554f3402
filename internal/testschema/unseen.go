package testschema

import (
	"bytes"
	"fmt"
	"sort"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Unseen lists the fields the schema describes that none of documents
// (--format json) and lines (--format jsonl) holds, each named as its
// $defs entry and property ("config.socket", "interval_fields.kernel";
// "#.intervals" for the root's own). Golden files that together leave
// nothing unseen show every field the schema knows: with the schema's
// strictness, the goldens and the schema describe the same fields.
func (c *Checker) Unseen(documents, lines [][]byte) ([]string, error) {
	defs, _ := c.raw["$defs"].(map[string]any)
	seen := map[string]bool{}
	w := walker{defs: defs, seen: seen}
	for i, d := range documents {
		v, err := jsonschema.UnmarshalJSON(bytes.NewReader(d))
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", i+1, err)
		}
		w.walk("#", c.raw, v)
	}
	for i, l := range lines {
		v, err := jsonschema.UnmarshalJSON(bytes.NewReader(l))
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", i+1, err)
		}
		w.walk(lineDef, defs[lineDef].(map[string]any), v)
	}
	var unseen []string
	add := func(name string, node map[string]any) {
		props, _ := node["properties"].(map[string]any)
		for p := range props {
			if !seen[name+"."+p] {
				unseen = append(unseen, name+"."+p)
			}
		}
	}
	add("#", c.raw)
	for name, d := range defs {
		if node, ok := d.(map[string]any); ok {
			add(name, node)
		}
	}
	sort.Strings(unseen)
	return unseen, nil
}

// walker follows a value through the schema, marking the properties it
// holds as seen.
type walker struct {
	defs map[string]any
	seen map[string]bool
}

func (w walker) walk(name string, node map[string]any, v any) {
	if ref, ok := node["$ref"].(string); ok {
		def := strings.TrimPrefix(ref, "#/$defs/")
		if sub, ok := w.defs[def].(map[string]any); ok {
			w.walk(def, sub, v)
		}
	}
	if cond, ok := node["if"].(map[string]any); ok {
		branch := "else"
		if matches(cond, v) {
			branch = "then"
		}
		if sub, ok := node[branch].(map[string]any); ok {
			w.walk(name, sub, v)
		}
	}
	switch v := v.(type) {
	case map[string]any:
		props, _ := node["properties"].(map[string]any)
		for k, sub := range props {
			val, ok := v[k]
			if !ok {
				continue
			}
			w.seen[name+"."+k] = true
			if sub, ok := sub.(map[string]any); ok {
				w.walk(name+"."+k, sub, val)
			}
		}
	case []any:
		if items, ok := node["items"].(map[string]any); ok {
			for _, e := range v {
				w.walk(name, items, e)
			}
		}
	}
}

// matches reports whether v has the constant properties cond asks for:
// the one form of "if" the schema uses (a line's "type").
func matches(cond map[string]any, v any) bool {
	obj, ok := v.(map[string]any)
	if !ok {
		return false
	}
	props, _ := cond["properties"].(map[string]any)
	for k, p := range props {
		want, _ := p.(map[string]any)["const"]
		if obj[k] != want {
			return false
		}
	}
	return true
}
