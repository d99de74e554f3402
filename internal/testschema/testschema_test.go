package testschema

import (
	"reflect"
	"strings"
	"testing"
)

// tiny is a schema laid out as docs/result.schema.json is, small enough
// to read: a document holds a and, optionally, b; a line is one of two
// kinds.
const tiny = `{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "type": "object",
  "properties": {"a": {"$ref": "#/$defs/inner"}, "b": {"type": "integer"}},
  "required": ["a"],
  "additionalProperties": false,
  "$defs": {
    "inner": {"type": "object", "properties": {"x": {"type": "string"}, "y": {"type": "string"}}, "additionalProperties": false},
    "jsonl_line": {
      "type": "object",
      "required": ["type"],
      "if": {"properties": {"type": {"const": "interval"}}},
      "then": {"$ref": "#/$defs/line_interval"},
      "else": {"$ref": "#/$defs/line_result"}
    },
    "line_interval": {"properties": {"type": {"const": "interval"}, "n": {"type": "integer"}}, "additionalProperties": false},
    "line_result": {"properties": {"type": {"const": "result"}, "a": {"$ref": "#/$defs/inner"}}, "additionalProperties": false}
  }
}`

func TestPublishedCompiles(t *testing.T) {
	if _, err := Published(); err != nil {
		t.Fatal(err)
	}
}

func TestNewRejectsBadSchema(t *testing.T) {
	for _, s := range []string{`{"type": "objekt"}`, `{"type": "object"`, `[]`} {
		if _, err := New([]byte(s)); err == nil {
			t.Errorf("New(%s) = nil error, want one", s)
		}
	}
	if _, err := New([]byte(`{"type": "object"}`)); err == nil || !strings.Contains(err.Error(), "jsonl_line") {
		t.Errorf("New without $defs/jsonl_line: %v, want an error naming it", err)
	}
}

func TestDocument(t *testing.T) {
	c, err := New([]byte(tiny))
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		doc  string
		want string // in the error; "" for none
	}{
		{`{"a": {"x": "1"}, "b": 2}`, ""},
		{`{"a": {"x": "1", "z": "3"}}`, "/a: additional properties 'z' not allowed"},
		{`{"a": {}, "c": 1}`, "additional properties 'c' not allowed"},
		{`{"b": 2}`, "missing property 'a'"},
		{`{"a": {"x": 1}}`, "/a/x: got number, want string"},
		{`{"a": {}} {"a": {}}`, "not one JSON value"},
	} {
		err := c.Document([]byte(tt.doc))
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("Document(%s) = %v, want nil", tt.doc, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("Document(%s) = %v, want an error with %q", tt.doc, err, tt.want)
		}
	}
}

func TestLines(t *testing.T) {
	c, err := New([]byte(tiny))
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		lines string
		want  string
	}{
		{`{"type":"interval","n":1}` + "\n" + `{"type":"result","a":{}}` + "\n", ""},
		{`{"type":"result","a":{}}`, ""},
		{"", "no JSON lines"},
		{`{"type":"interval","n":1}`, "line 1, the last, is a \"interval\" line"},
		{`{"type":"result","a":{}}` + "\n" + `{"type":"interval","n":1}`, "line 1 is the result, but 1 lines follow"},
		{`{"type":"interval","a":{}}` + "\n" + `{"type":"result","a":{}}`, "line 1: does not match"},
		{`{"type":"other"}`, "line 1: does not match"},
	} {
		err := c.Lines([]byte(tt.lines))
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("Lines(%q) = %v, want nil", tt.lines, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("Lines(%q) = %v, want an error with %q", tt.lines, err, tt.want)
		}
	}
}

func TestUnseen(t *testing.T) {
	c, err := New([]byte(tiny))
	if err != nil {
		t.Fatal(err)
	}
	got, err := c.Unseen([][]byte{[]byte(`{"a": {"x": "1"}}`)}, [][]byte{[]byte(`{"type":"interval","n":1}`)})
	if err != nil {
		t.Fatal(err)
	}
	// b and y are in neither, nor is a result line.
	want := []string{"#.b", "inner.y", "line_result.a", "line_result.type"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Unseen = %q, want %q", got, want)
	}
}
