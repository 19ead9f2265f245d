// Package sharedtest locates the team's large benchmark inputs in the shared/ directory
// beside the checkout (or $SHARED), read in place and never copied into the repository;
// only benchmarks read it, through Dir (tests read what the repository ships, package
// internal/testfiles). Missing reports an absent prerequisite (a benchmark input, a
// tool such as MinIO or python3 with torch): it fails the test when CI=true (so CI
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

// Missing reports that something a test needs is absent: a failure when CI=true, a skip
// otherwise.
func Missing(tb testing.TB, format string, args ...any) {
	tb.Helper()
	if os.Getenv("CI") == "true" {
		tb.Fatalf("missing in CI: "+format, args...)
	}
	tb.Skipf("missing: "+format, args...)
}
