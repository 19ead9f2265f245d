//go:build race

package tokenize

// raceEnabled: the race detector is on (`make race`). The heaviest checks that run on one
// goroutine (nothing for the detector to find) take less input there; `make test` runs
// them whole.
const raceEnabled = true
