package kernels

import "fmt"

// OutOfMemoryError is Alloc's error when the backend lacks the memory: it names
// what was being allocated, the bytes asked for and free. The trainer adds the
// next step (a smaller batch_size, more grad_accum, zero 1) in NextStep.
type OutOfMemoryError struct {
	Device string // e.g. "NVIDIA H100 80GB HBM3"
	What   string // Alloc's what
	Bytes  int64  // asked for
	Free   int64  // free on the device when it failed (-1: unknown)
	Total  int64  // the device's memory (-1: unknown)
	// NextStep, when set, is what the user can do about it, appended to the line.
	NextStep string
}

func (e *OutOfMemoryError) Error() string {
	msg := fmt.Sprintf("out of memory on %s allocating %s: %s asked, %s free of %s", e.Device, e.What, GiB(e.Bytes), GiB(e.Free), GiB(e.Total))
	if e.NextStep != "" {
		msg += "; " + e.NextStep
	}
	return msg
}

// GiB formats bytes for people: "1.50 GiB", "12.3 MiB" ("?" when negative).
func GiB(b int64) string {
	switch {
	case b < 0:
		return "?"
	case b >= 1<<30:
		return fmt.Sprintf("%.2f GiB", float64(b)/(1<<30))
	case b >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20))
	}
	return fmt.Sprintf("%.1f KiB", float64(b)/(1<<10))
}
