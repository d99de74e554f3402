package internal_test

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The longest a non-test file and a function (its body, func literals
// included) may be, in lines, unless they say why.
const (
	maxFileLines = 600
	maxFuncLines = 80
)

// longMark, followed by a reason, lets a file or a function be longer:
// on a comment line of its own in the file (the whole file), or in a
// function's doc comment (that function). Func literals have no doc
// comment: only the file's mark covers them.
const longMark = "volley:long"

func TestSize(t *testing.T) {
	root := ".."
	files := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != root && (name == "testdata" || name == "vendor" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		bad, taken, err := checkSize(filepath.ToSlash(rel), src)
		if err != nil {
			return err
		}
		files++
		for _, e := range taken {
			t.Log(e)
		}
		for _, b := range bad {
			t.Error(b)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 50 {
		t.Fatalf("checked %d files, want the module's (more than 50)", files)
	}
}

// checkSize returns what in the file at path, with the text src, is over
// its limit without a reason, and the exceptions taken, with theirs.
func checkSize(path string, src []byte) (bad, taken []string, err error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, src, parser.ParseComments)
	if err != nil {
		return nil, nil, err
	}
	docs := map[*ast.CommentGroup]bool{}
	for _, d := range f.Decls {
		if fn, ok := d.(*ast.FuncDecl); ok && fn.Doc != nil {
			docs[fn.Doc] = true
		}
	}
	fileOK, fileWhy := false, ""
	for _, g := range f.Comments {
		if docs[g] {
			continue
		}
		for _, c := range g.List {
			if why, ok := strings.CutPrefix(c.Text, "// "+longMark); ok {
				if why = strings.TrimSpace(why); why == "" {
					bad = append(bad, fmt.Sprintf("%s:%d: %s without a reason", path, fset.Position(c.Pos()).Line, longMark))
					continue
				}
				fileOK, fileWhy = true, why
			}
		}
	}
	if fileOK {
		taken = append(taken, fmt.Sprintf("%s: long by exception: %s", path, fileWhy))
	}
	if n := fset.File(f.Pos()).LineCount(); n > maxFileLines && !fileOK {
		bad = append(bad, fmt.Sprintf("%s: %d lines, want at most %d (or a line // %s <reason>)", path, n, maxFileLines, longMark))
	}
	ast.Inspect(f, func(n ast.Node) bool {
		var body *ast.BlockStmt
		var doc *ast.CommentGroup
		name := "func literal"
		switch x := n.(type) {
		case *ast.FuncDecl:
			body, doc, name = x.Body, x.Doc, x.Name.Name
		case *ast.FuncLit:
			body = x.Body
		}
		if body == nil {
			return true
		}
		at := fset.Position(body.Pos()).Line
		lines := fset.Position(body.End()).Line - at
		why, marked := funcReason(doc)
		switch {
		case marked && why == "":
			bad = append(bad, fmt.Sprintf("%s:%d: %s: %s without a reason", path, at, name, longMark))
		case marked:
			taken = append(taken, fmt.Sprintf("%s:%d: %s (%d lines) long by exception: %s", path, at, name, lines, why))
		case lines > maxFuncLines && !fileOK:
			bad = append(bad, fmt.Sprintf("%s:%d: %s is %d lines, want at most %d (or %s <reason> in its doc comment)", path, at, name, lines, maxFuncLines, longMark))
		}
		return true
	})
	return bad, taken, nil
}

// funcReason returns the reason a function's doc comment gives for its
// length, and whether it has the mark.
func funcReason(doc *ast.CommentGroup) (why string, marked bool) {
	if doc == nil {
		return "", false
	}
	_, after, ok := strings.Cut(doc.Text(), longMark)
	if !ok {
		return "", false
	}
	why, _, _ = strings.Cut(after, "\n")
	return strings.TrimSpace(why), true
}

// TestSizeCatch: the size check finds a long function, a long func
// literal and a long file, and takes the exceptions that say why, and
// only those.
func TestSizeCatch(t *testing.T) {
	body := func(n int) string { return strings.Repeat("\tx++\n", n-1) }
	for _, tt := range []struct {
		name      string
		src       string
		bad       []string // each a prefix of a finding, in order
		exception int      // exceptions taken
	}{
		{"short", "package p\n\nfunc f() {\n" + body(80) + "}\n", nil, 0},
		{"long func", "package p\n\nfunc f() {\n" + body(81) + "}\n", []string{"p.go:3: f is 81 lines"}, 0},
		{"long literal", "package p\n\nvar g = func() {\n" + body(81) + "}\n", []string{"p.go:3: func literal is 81 lines"}, 0},
		{"long file", "package p\n" + strings.Repeat("\n", 600), []string{"p.go: 601 lines"}, 0},
		{"func says why", "package p\n\n// f is a table.\n// volley:long a table of cases\nfunc f() {\n" + body(81) + "}\n", nil, 1},
		{"func without a reason", "package p\n\n// f.\n// volley:long\nfunc f() {\n" + body(81) + "}\n", []string{"p.go:5: f: volley:long without a reason"}, 0},
		{"file says why", "// volley:long a generated list\n\npackage p\n\nvar g = func() {\n" + body(81) + "}\n" + strings.Repeat("\n", 600), nil, 1},
		{"file without a reason", "// volley:long\n\npackage p\n" + strings.Repeat("\n", 600), []string{"p.go:1: volley:long without a reason", "p.go: 603 lines"}, 0},
		{"mark on another function", "package p\n\n// f.\n// volley:long short anyway\nfunc f() {}\n\nfunc g() {\n" + body(81) + "}\n", []string{"p.go:7: g is 81 lines"}, 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			bad, taken, err := checkSize("p.go", []byte(tt.src))
			if err != nil {
				t.Fatal(err)
			}
			ok := len(bad) == len(tt.bad)
			for i := 0; ok && i < len(bad); i++ {
				ok = strings.HasPrefix(bad[i], tt.bad[i])
			}
			if !ok || len(taken) != tt.exception {
				t.Errorf("checkSize(%s) = %q, %d exceptions, want %q, %d", tt.name, bad, len(taken), tt.bad, tt.exception)
			}
		})
	}
}
