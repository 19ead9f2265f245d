// Package sharedtest locates the project's shared test data: the real tokenizers and
// corpora in the shared/ directory beside the checkout (or $SHARED), read in place and
// never copied into the repository. A missing file fails the test when CI=true (so CI
// cannot pass by skipping) and skips it otherwise.
package sharedtest

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// Dir is the shared data directory: $SHARED, else shared/ beside the repository root.
func Dir() string {
	if d := os.Getenv("SHARED"); d != "" {
		return d
	}
	_, file, _, _ := runtime.Caller(0) // .../internal/sharedtest/sharedtest.go
	return filepath.Join(filepath.Dir(file), "..", "..", "..", "shared")
}

// File returns the absolute path of rel under Dir, failing (CI=true) or skipping the
// test if it does not exist.
func File(tb testing.TB, rel string) string {
	tb.Helper()
	path, err := filepath.Abs(filepath.Join(Dir(), rel))
	if err == nil {
		_, err = os.Stat(path)
	}
	if err != nil {
		Missing(tb, "shared data: %v (set SHARED to the shared/ directory)", err)
	}
	return path
}

// Read returns the contents of rel under Dir, as File finds it.
func Read(tb testing.TB, rel string) []byte {
	tb.Helper()
	data, err := os.ReadFile(File(tb, rel))
	if err != nil {
		tb.Fatal(err)
	}
	return data
}

// Missing reports that something a test needs is absent: a failure when CI=true, a skip
// otherwise.
func Missing(tb testing.TB, format string, args ...any) {
	tb.Helper()
	if os.Getenv("CI") == "true" {
		tb.Fatalf("missing in CI: "+format, args...)
	}
	tb.Skipf("missing: "+format, args...)
}
