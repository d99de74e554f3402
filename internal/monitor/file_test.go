package monitor

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestParseFileKnownAnswer(t *testing.T) {
	key := filepath.Join(t.TempDir(), "key")
	if err := os.WriteFile(key, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	doc := `
defaults:
  rate: 1k
  size: 1K
  interval: 2
  timeout: 500ms
  key_file: ` + key + `
targets:
  - name: db-1
    url: udp://10.0.0.5:7766
    labels: {rack: r12, role: db}
    rate: 20
    poisson: true
  - url: tcp://[::1]:7000
    duration: 5s
    every: 1m
    reply_size: 64
`
	base := Schedule{Rate: 1, Size: 100, Every: time.Hour}
	got, err := ParseFile("t.yaml", []byte(doc), FileOptions{Base: base})
	if err != nil {
		t.Fatalf("ParseFile = %v", err)
	}
	want := []Peer{
		{Target: Target{Name: "db-1", URL: "udp://10.0.0.5:7766", Source: "file",
			Labels:   map[string]string{"rack": "r12", "role": "db"},
			Schedule: Schedule{Rate: 20, Poisson: true, Size: 1024, Interval: 2 * time.Second, Timeout: 500 * time.Millisecond, Every: time.Hour, Key: []byte("s3cret")}}},
		{Target: Target{Name: "tcp://[::1]:7000", URL: "tcp://[::1]:7000", Source: "file",
			Schedule: Schedule{Rate: 1000, Size: 1024, ReplySize: 64, Interval: 2 * time.Second, Timeout: 500 * time.Millisecond, Duration: 5 * time.Second, Every: time.Minute, Key: []byte("s3cret")}}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("ParseFile = %+v, want %+v", got, want)
	}
}

func TestParseFilePeers(t *testing.T) {
	doc := "peers:\n  - {name: a, url: udp://10.0.0.1, zone: eu-1}\n  - {name: b, url: udp://10.0.0.2}\n"
	got, err := ParseFile("p.yaml", []byte(doc), FileOptions{Zones: true, Source: "peers"})
	if err != nil {
		t.Fatalf("ParseFile = %v", err)
	}
	if len(got) != 2 || got[0].Zone != "eu-1" || got[1].Zone != "" || got[0].Source != "peers" {
		t.Errorf("ParseFile = %+v, want a in eu-1, b in no zone, both from peers", got)
	}
	if _, err := ParseFile("t.yaml", []byte(doc), FileOptions{}); err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Errorf("zone in a targets file: ParseFile = %v, want an error at line 2", err)
	}
}

// TestParseFileEmpty: a file with no targets is refused (a writer that
// truncates first makes one for a moment), so the last good set stays.
func TestParseFileEmpty(t *testing.T) {
	for _, doc := range []string{"", "# nothing\n", "targets:\n", "defaults: {rate: 5}\n"} {
		got, err := ParseFile("t.yaml", []byte(doc), FileOptions{})
		if !errors.Is(err, ErrFile) || !strings.Contains(err.Error(), "no targets") || got != nil {
			t.Errorf("ParseFile(%q) = %v, %v; want an ErrFile saying there are no targets", doc, got, err)
		}
	}
}

func TestParseFileErrors(t *testing.T) {
	long := strings.Repeat("x", MaxLabelValue+1)
	var many strings.Builder
	for i := range MaxLabels + 1 {
		many.WriteString("l" + string(rune('a'+i)) + ": v\n      ")
	}
	for _, c := range []struct{ doc, want string }{
		{"targets:\n  - url: udp://a\n    colour: red\n", "line 3: target 1: unknown field \"colour\""},
		{"tragets: []\n", "line 1: the file: unknown field \"tragets\""},
		{"defaults:\n  rate: 10\n  sise: 1\n", "line 3: defaults: unknown field \"sise\""},
		{"targets:\n  - url: udp://a\n    rate: 10x\n", "line 3: target \"udp://a\": rate"},
		{"defaults:\n  size: -1\n", "line 2: defaults: size"},
		{"targets:\n  - url: udp://a\n    timeout: 1\n", "line 3: target \"udp://a\": timeout"},
		{"targets:\n  - url: udp://a\n    interval: -1s\n", "line 3: target \"udp://a\": interval"},
		{"targets:\n  - url: udp://a\n    poisson: maybe\n", "line 3: target \"udp://a\": poisson"},
		{"targets:\n  - url: udp://a\n  - name: b\n    url: udp://b\n  - url: udp://a\n", "line 5: target \"udp://a\": name already given at line 2"},
		{"targets:\n  - {name: x, url: udp://a}\n  - {name: x, url: udp://b}\n", "line 3: target \"x\": name already given at line 2"},
		{"targets:\n  - url: udp://a\n    labels: {9rack: r}\n", "line 3: target \"udp://a\": label \"9rack\""},
		{"targets:\n  - url: udp://a\n    labels:\n      __name: r\n", "line 4: target \"udp://a\": label \"__name\""},
		{"targets:\n  - url: udp://a\n    labels:\n      ok: 1\n      job: r\n", "line 5: target \"udp://a\": label \"job\": volley or Prometheus uses that name"},
		{"targets:\n  - url: udp://a\n    labels: {target: r}\n", "line 3: target \"udp://a\": label \"target\": volley or Prometheus uses"},
		{"targets:\n  - url: udp://a\n    labels: {source_zone: r}\n", "line 3: target \"udp://a\": label \"source_zone\": volley or Prometheus uses"},
		{"targets:\n  - url: udp://a\n    labels: {direction: up}\n", "line 3: target \"udp://a\": label \"direction\": volley or Prometheus uses"},
		{"targets:\n  - url: udp://a\n    labels: {a: " + long + "}\n", "line 3: target \"udp://a\": label \"a\": value of 129 bytes"},
		{"targets:\n  - url: udp://a\n    labels:\n      " + many.String() + "\n", "line 4: target \"udp://a\": 17 labels, at most 16"},
		{"targets:\n  - url: udp://a\n    labels: [a, b]\n", "line 3: target \"udp://a\": labels: want a mapping"},
		{"targets:\n  - name: x\n", "line 2: target 1: no url"},
		{"targets:\n  - name: " + long + "\n    url: udp://a\n", "line 2: target 1: name of 129 bytes"},
		{"targets:\n  - url: ftp://x\n", "line 2: target 1: url:"},
		{"targets:\n  - url: stamp://x\n", "line 2: target 1: url stamp://x: a monitor measures udp://, tcp://, unix://, unixgram://, dbus:// targets, not stamp://"},
		{"targets:\n  - url: udp://a\n    rate: [1]\n", "line 3: target \"udp://a\": rate: want a single value"},
		{"targets: {a: 1}\n", "line 1: targets: want a list"},
		{"targets:\n  - url: udp://a\n    key_file: /nonexistent/key\n", "line 3: target \"udp://a\": key_file"},
		{"targets: [\n", "line 1: did not find expected node content"},
		{"targets: []\npeers: []\n", "line 2: both targets and peers"},
	} {
		_, err := ParseFile("conf.yaml", []byte(c.doc), FileOptions{})
		if err == nil || !errors.Is(err, ErrFile) || !strings.Contains(err.Error(), "conf.yaml: "+c.want) {
			t.Errorf("ParseFile(%q) = %v, want an ErrFile naming conf.yaml and %q", c.doc, err, c.want)
		}
	}
}

func TestCheckFileLabel(t *testing.T) {
	for _, name := range []string{"rack", "zone", "_x", "A9"} {
		if err := checkFileLabel(name, "v"); err != nil {
			t.Errorf("checkFileLabel(%q) = %v, want nil", name, err)
		}
	}
	for _, name := range []string{"le", "quantile", "instance", "job", "source", "target_zone", "a-b", "", "__x"} {
		if err := checkFileLabel(name, "v"); err == nil {
			t.Errorf("checkFileLabel(%q) = nil, want an error", name)
		}
	}
}

func TestLoadFileTooLarge(t *testing.T) {
	p := filepath.Join(t.TempDir(), "big.yaml")
	if err := os.WriteFile(p, make([]byte, MaxFileBytes+1), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadFile(p, FileOptions{}); err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Errorf("LoadFile(too large) = %v, want an error saying so", err)
	}
}

func TestParseFileOverrides(t *testing.T) {
	doc := "defaults: {poisson: true, duration: 5}\ntargets:\n  - {url: udp://a, poisson: false, duration: 0}\n  - {url: udp://b}\n"
	got, err := ParseFile("t.yaml", []byte(doc), FileOptions{Base: Schedule{Rate: 3}})
	if err != nil {
		t.Fatalf("ParseFile = %v", err)
	}
	want := []Schedule{{Rate: 3}, {Rate: 3, Poisson: true, Duration: 5 * time.Second}}
	for i, p := range got {
		if !reflect.DeepEqual(p.Schedule, want[i]) {
			t.Errorf("target %d schedule %+v, want %+v (an entry's false and 0 override the defaults)", i+1, p.Schedule, want[i])
		}
	}
}

// TestLoadFileNotRegular: a FIFO (or a device) at the file's path is
// refused at once: reading it would block every reload after it.
func TestLoadFileNotRegular(t *testing.T) {
	p := filepath.Join(t.TempDir(), "targets.yml")
	if err := syscall.Mkfifo(p, 0o600); err != nil {
		t.Skipf("skipping: no FIFO here: %v", err)
	}
	_, err := LoadFile(p, FileOptions{})
	if !errors.Is(err, ErrFile) || !strings.Contains(err.Error(), "not a regular file") {
		t.Fatalf("LoadFile(FIFO) = %v, want an ErrFile saying it is not a regular file", err)
	}
}

// TestSetLabelNamesInAll: the label names of a whole set are bounded,
// not only each target's: every series carries them all.
func TestSetLabelNamesInAll(t *testing.T) {
	var ts []Target
	for i := range MaxLabelNames + 1 {
		ts = append(ts, Target{Name: fmt.Sprint("t", i), URL: "udp://127.0.0.1:9", Labels: map[string]string{fmt.Sprint("l", i): "v"}})
	}
	if _, err := checkSet(ts[:MaxLabelNames]); err != nil {
		t.Fatalf("checkSet(%d label names) = %v, want nil", MaxLabelNames, err)
	}
	if _, err := checkSet(ts); err == nil || !strings.Contains(err.Error(), fmt.Sprintf("at most %d in all", MaxLabelNames)) {
		t.Fatalf("checkSet(%d label names) = %v, want an error saying at most %d in all", MaxLabelNames+1, err, MaxLabelNames)
	}
	bad := Target{Name: "a\nvolley: FAKE", URL: "udp://127.0.0.1:9"}
	if _, err := checkSet([]Target{bad}); err == nil || !strings.Contains(err.Error(), "control characters") {
		t.Fatalf("checkSet(a name with a newline) = %v, want it refused", err)
	}
}
