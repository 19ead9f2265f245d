//go:build !race

package tokenize

// raceEnabled: see race_on_test.go.
const raceEnabled = false
