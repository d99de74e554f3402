package testenv

import (
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
)

func TestRequired(t *testing.T) {
	for _, tt := range []struct {
		env, component string
		want           bool
	}{
		{"", "dbus", false},
		{"dbus", "dbus", true},
		{"ipv6,netns,dbus", "dbus", true},
		{"ipv6,netns,dbus", "netns", true},
		{"ipv6, dbus", "dbus", true},
		{"all", "dbus", true},
		{"ipv6,all", "netns", true},
		{"nodbus", "dbus", false},
		{"dbus-send", "dbus", false},
		{"ipv6", "dbus", false},
	} {
		t.Setenv(Var, tt.env)
		if got := Required(tt.component); got != tt.want {
			t.Errorf("%s=%q: Required(%q) = %v, want %v", Var, tt.env, tt.component, got, tt.want)
		}
	}
}

// recorder is a testing.TB that records how Require ended it.
type recorder struct {
	testing.TB
	failed, skipped string
}

func (r *recorder) Helper() {}
func (r *recorder) Fatalf(format string, args ...any) {
	r.failed = fmt.Sprintf(format, args...)
	runtime.Goexit() // as testing's Fatalf does
}
func (r *recorder) Skipf(format string, args ...any) {
	r.skipped = fmt.Sprintf(format, args...)
	runtime.Goexit() // as testing's Skipf does
}

// run calls Require on a recorder in a goroutine of its own, as a test's
// Fatalf and Skipf end the goroutine that calls them.
func run(component string, missing error) *recorder {
	r := &recorder{}
	var wg sync.WaitGroup
	wg.Go(func() { Require(r, component, missing) })
	wg.Wait()
	return r
}

func TestRequire(t *testing.T) {
	missing := errors.New(`exec: "dbus-daemon": executable file not found in $PATH`)

	t.Setenv(Var, "ipv6,netns")
	if r := run("dbus", nil); r.failed != "" || r.skipped != "" {
		t.Errorf("Require(dbus, nil): failed %q, skipped %q; want neither", r.failed, r.skipped)
	}
	r := run("dbus", missing)
	if r.failed != "" || r.skipped != "skipping: dbus is missing: "+missing.Error() {
		t.Errorf("Require(dbus, missing) with %s=ipv6,netns: failed %q, skipped %q; want a skip that gives the reason", Var, r.failed, r.skipped)
	}

	for _, env := range []string{"ipv6,netns,dbus", "all"} {
		t.Setenv(Var, env)
		r := run("dbus", missing)
		if r.skipped != "" || !strings.Contains(r.failed, "dbus is required") || !strings.Contains(r.failed, missing.Error()) {
			t.Errorf("Require(dbus, missing) with %s=%s: failed %q, skipped %q; want a failure naming dbus and why", Var, env, r.failed, r.skipped)
		}
	}
}

// TestSkipMessages checks what docs/testing.md promises: every skip in the
// module says "skipping: " and why, so that grepping go test -v's output
// for "skipping:" finds every reason.
func TestSkipMessages(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	calls := 0
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) && path != root {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			switch sel.Sel.Name {
			case "Skip", "Skipf", "SkipNow":
			default:
				return true
			}
			calls++
			pos := fset.Position(call.Pos())
			if len(call.Args) == 0 {
				t.Errorf("%s: %s without a reason; want t.Skipf(\"skipping: why\")", pos, sel.Sel.Name)
				return true
			}
			lit, ok := call.Args[0].(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				t.Errorf("%s: %s's first argument is not a string that starts \"skipping: \"", pos, sel.Sel.Name)
				return true
			}
			if s, err := strconv.Unquote(lit.Value); err != nil || !strings.HasPrefix(s, "skipping: ") {
				t.Errorf("%s: %s(%s); want a message that starts \"skipping: \"", pos, sel.Sel.Name, lit.Value)
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if calls < 5 {
		t.Fatalf("found %d skips in the module; the check saw too little", calls)
	}
}
