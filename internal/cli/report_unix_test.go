//go:build unix

package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestReportInterrupted: a signal (the context ending) ends volley report
// at once, with exit 130, even while it is blocked opening a FIFO that no
// one writes.
func TestReportInterrupted(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatalf("mkfifo: %v", err)
	}
	// Let the open left behind return, once the test is done.
	t.Cleanup(func() {
		if w, err := os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			w.Close()
		}
	})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var out, errOut bytes.Buffer
	code := Main(ctx, []string{"report", fifo}, &out, &errOut)
	if code != ExitInterrupted || errOut.String() != "volley: report: interrupted\n" {
		t.Errorf("report of a FIFO, cancelled: exit %d, stderr %q; want exit %d and a short message", code, errOut.String(), ExitInterrupted)
	}
	// A file read to its end is interrupted too, not an error of its own.
	runs := savedRuns(t)
	code = Main(ctx, []string{"report", filepath.Join(runs, "run.json")}, &out, &errOut)
	if code != ExitInterrupted {
		t.Errorf("report of a file, cancelled: exit %d, want %d", code, ExitInterrupted)
	}
}
