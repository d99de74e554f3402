package saved

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/volley-net/volley/internal/report"
)

// FuzzRead: whatever a file holds, reading it gives a result or an error,
// never a panic, and the result can be written in every format volley
// report writes. The seeds are volley's own outputs (testdata) and pieces
// of them.
func FuzzRead(f *testing.F) {
	files, err := filepath.Glob("testdata/*.json*")
	if err != nil {
		f.Fatal(err)
	}
	csvs, _ := filepath.Glob("testdata/*.csv")
	for _, name := range append(files, csvs...) {
		data, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
		f.Add(data[:len(data)/3])
		if lines := strings.SplitAfter(string(data), "\n"); len(lines) > 6 {
			f.Add([]byte(strings.Join(lines[:6], "")))
		}
	}
	f.Add([]byte(logLines(10)))
	f.Add([]byte(""))
	f.Add([]byte("{}"))
	f.Add([]byte("{\"type\":\"interval\"}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := ReadFrom(context.Background(), bytes.NewReader(data), "fuzz", Options{Interval: time.Millisecond, MaxProbes: 50, Percentiles: []float64{50, 99.9}})
		if err == nil && (file == nil || file.Result == nil) {
			t.Fatalf("ReadFrom = %v, nil: no result and no error", file)
		}
		if file == nil {
			return
		}
		if file.Result == nil {
			t.Fatal("a File without a Result")
		}
		if err := report.WriteText(io.Discard, file.Result); err != nil {
			t.Fatal(err)
		}
		if err := report.WriteJSONL(io.Discard, file.Result); err != nil {
			t.Fatal(err)
		}
	})
}
