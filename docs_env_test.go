package gptkit_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// internalEnv are the GPTKIT_ variables of the code that a user never sets: the
// commands set them for the processes they start.
var internalEnv = map[string]string{
	"GPTKIT_LAUNCHER_STORE": "set by train's launcher for its ranks (train/dist/place.go)",
}

// TestDocsNameEveryEnv: every GPTKIT_ environment variable the commands and packages
// read (outside tests) is named in README.md or docs/*.md.
func TestDocsNameEveryEnv(t *testing.T) {
	env := regexp.MustCompile(`GPTKIT_[A-Z0-9_]*[A-Z0-9]`)
	where := map[string]string{}
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != "." && (strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") || name == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, v := range env.FindAllString(string(b), -1) {
			if _, ok := where[v]; !ok {
				where[v] = path
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	pages, err := filepath.Glob("docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	var docs strings.Builder
	for _, p := range append(pages, "README.md") {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		docs.Write(b)
	}
	named := map[string]bool{}
	for _, v := range env.FindAllString(docs.String(), -1) {
		named[v] = true
	}
	if len(where) < 5 {
		t.Fatalf("only %d GPTKIT_ variables found in the code (%v): did the walk miss it?", len(where), where)
	}
	for v, path := range where {
		if !named[v] && internalEnv[v] == "" {
			t.Errorf("%s reads %s, which neither README.md nor docs/*.md names (or list it in internalEnv, saying who sets it)", path, v)
		}
	}
}
