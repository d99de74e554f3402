//go:build linux

package e2e

import (
	"bytes"
	"context"
	"image/color"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// chromium is the headless browser the HTML report is opened in: Debian's
// chromium package.
func chromium(t *testing.T) string {
	t.Helper()
	path, err := exec.LookPath("chromium")
	require(t, "chromium", err)
	return path
}

// headless runs Chromium on page with args, in a profile of its own, with
// nothing that would reach beyond this machine, for at most a minute.
func headless(t *testing.T, browser, page string, args ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	base := []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--user-data-dir=" + t.TempDir(), "--hide-scrollbars"}
	cmd := exec.CommandContext(ctx, browser, append(append(base, args...), "file://"+page)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return stdout.Bytes()
}

// TestPlotHTMLInChromium opens a run's HTML report in headless Chromium:
// the page's figures and tables are in the DOM the browser built, and its
// screenshots, at a phone's width and a 4K screen's, show drawn figures
// (not a blank page).
func TestPlotHTMLInChromium(t *testing.T) {
	browser := chromium(t)
	dir := t.TempDir()
	page := filepath.Join(dir, "run.html")
	r := volleyRun(t, "client", "-t", "2s", "-i", "200ms", "--rate", "2000", "-q", "--plot", page)
	if r.code != 0 {
		t.Fatalf("volley client --plot: exit %d: %s", r.code, r.stderr)
	}
	dom := string(headless(t, browser, page, "--dump-dom"))
	for _, id := range []string{"volley-report", "fig-latency", "fig-percentiles", "fig-histogram", "fig-throughput", "summary", "config", "intervals"} {
		if !strings.Contains(dom, `id="`+id+`"`) {
			t.Errorf("the page Chromium built has no element with id %q", id)
		}
	}
	if n := strings.Count(dom, "<svg"); n < 4 {
		t.Errorf("the page Chromium built has %d <svg> figures, want at least 4", n)
	}
	for _, size := range []string{"390,3000", "3840,4000"} {
		shot := filepath.Join(dir, "shot-"+strings.ReplaceAll(size, ",", "x")+".png")
		headless(t, browser, page, "--window-size="+size, "--screenshot="+shot)
		checkDrawn(t, shot)
	}
}

// checkDrawn fails unless the PNG at path shows a drawing: a good share
// of its pixels not the background's colour, in many colours.
func checkDrawn(t *testing.T, path string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("Chromium wrote no screenshot: %v", err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("screenshot %s: %v", path, err)
	}
	b := img.Bounds()
	bg := img.At(b.Min.X, b.Min.Y)
	colours := map[[4]uint32]bool{}
	var drawn, all int
	for y := b.Min.Y; y < b.Max.Y; y += 2 {
		for x := b.Min.X; x < b.Max.X; x += 2 {
			c := img.At(x, y)
			r, g, bl, a := c.RGBA()
			colours[[4]uint32{r >> 8, g >> 8, bl >> 8, a >> 8}] = true
			if !sameColour(c, bg) {
				drawn++
			}
			all++
		}
	}
	if share := float64(drawn) / float64(all); share < 0.01 || len(colours) < 8 {
		t.Errorf("screenshot %s (%v) is nearly blank: %.2f%% of its pixels drawn, %d colours", filepath.Base(path), b.Size(), 100*share, len(colours))
	}
}

func sameColour(a, b color.Color) bool {
	ar, ag, ab, aa := a.RGBA()
	br, bg, bb, ba := b.RGBA()
	return ar == br && ag == bg && ab == bb && aa == ba
}
