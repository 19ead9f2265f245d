//go:build !linux

package checkpoint

// exchange reports that this system has no atomic exchange of two directories.
func exchange(a, b string) (bool, error) { return false, nil }
