package main

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
)

func cpuModel(fromGo string) string {
	data, err := os.ReadFile("/proc/cpuinfo")
	if err == nil {
		for _, l := range strings.Split(string(data), "\n") {
			if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "model name" {
				return strings.TrimSpace(v)
			}
		}
	}
	if fromGo != "" {
		return fromGo
	}
	return "unknown"
}

func readLoadavg() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	return strings.Join(strings.Fields(string(data))[:3], " ")
}

// busyNote warns when the 1-minute loadavg before the run (when nothing of ours ran yet)
// shows other work on the machine.
func busyNote(loadStart string) string {
	f := strings.Fields(loadStart)
	if len(f) == 0 {
		return ""
	}
	v, err := strconv.ParseFloat(f[0], 64)
	if err != nil || v < 0.7 {
		return ""
	}
	return fmt.Sprintf("other work was running (1-minute loadavg %.2f on %d CPUs before the run began): wall-clock figures are noisy, compare the per-CPU-second figures too.", v, runtime.NumCPU())
}

func orDash(s string) string {
	if s == "" {
		return "—"
	}
	return s
}

func fatal(err error) {
	if errors.Is(err, os.ErrNotExist) {
		fmt.Fprintf(os.Stderr, "benchreport: %v (run `make bench`, which writes it)\n", err)
	} else {
		fmt.Fprintf(os.Stderr, "benchreport: %v\n", err)
	}
	os.Exit(1)
}
