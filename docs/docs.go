// Package docs holds volley's reference documents. The ones code reads
// are embedded here, so that tests and tools take the published file
// itself rather than a copy.
package docs

import _ "embed"

// ResultSchema is result.schema.json: the JSON Schema (draft 2020-12) of
// the client's --format json document and of its --format jsonl lines
// (at #/$defs/jsonl_line).
//
//go:embed result.schema.json
var ResultSchema []byte
