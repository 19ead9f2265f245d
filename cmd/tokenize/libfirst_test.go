package main

import (
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
	"unsafe"

	"gptkit/tokenize/spec"
)

// The library's first EncodeBatch in a process of its own, for BenchmarkCLIVsLibrary: the
// benchmark's library side runs in the test process, warm from its previous rounds (the
// tokenizer's caches filled from the same text, the memory of the last round's ids
// faulted in and reused), while every command starts cold. A program that encodes 100 MB
// once with the library starts cold too; this measures that.

// writeTexts writes texts to path as (8-byte little-endian length, bytes) records, for
// libraryFirstCall's helper process to read without parsing.
func writeTexts(tb testing.TB, path string, texts []string) {
	tb.Helper()
	var b []byte
	for _, t := range texts {
		b = binary.LittleEndian.AppendUint64(b, uint64(len(t)))
		b = append(b, t...)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		tb.Fatal(err)
	}
}

// libraryFirstCall runs this test binary as a helper process (TestLibraryFirstCallHelper)
// that reads the texts of path (writeTexts), loads the tokenizer name, collects garbage,
// and returns the CPU time of its one EncodeBatch of them on all cores.
func libraryFirstCall(tb testing.TB, path, name string) time.Duration {
	tb.Helper()
	exe, err := os.Executable()
	if err != nil {
		tb.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run", "^TestLibraryFirstCallHelper$", "-test.count", "1")
	cmd.Env = append(os.Environ(), "GPTKIT_LIBFIRST_TEXTS="+path, "GPTKIT_LIBFIRST_TOKENIZER="+name)
	out, err := cmd.CombinedOutput()
	if err != nil {
		tb.Fatalf("library first call: %v\n%s", err, out)
	}
	for _, line := range strings.Split(string(out), "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "libfirst_cpu_ns="); ok {
			ns, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				tb.Fatal(err)
			}
			return time.Duration(ns)
		}
	}
	tb.Fatalf("library first call printed no libfirst_cpu_ns:\n%s", out)
	return 0
}

// TestLibraryFirstCallHelper is libraryFirstCall's helper process; without its
// environment it does nothing. The texts are substrings of the file's one string: the
// helper makes no garbage that EncodeBatch's ids could reuse, already faulted in.
func TestLibraryFirstCallHelper(t *testing.T) {
	path := os.Getenv("GPTKIT_LIBFIRST_TEXTS")
	if path == "" {
		return
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	all := unsafe.String(unsafe.SliceData(data), len(data)) // no copy: data is not written again
	var texts []string
	for rest := all; len(rest) >= 8; {
		n := int(binary.LittleEndian.Uint64([]byte(rest[:8])))
		texts, rest = append(texts, rest[8:8+n]), rest[8+n:]
	}
	tok, err := spec.Load(context.Background(), os.Getenv("GPTKIT_LIBFIRST_TOKENIZER"), spec.Options{})
	if err != nil {
		t.Fatal(err)
	}
	runtime.GC()
	c0 := processCPU()
	ids := tok.EncodeBatch(texts, libraryWorkers(texts))
	cpu := processCPU() - c0
	runtime.KeepAlive(ids)
	fmt.Printf("libfirst_cpu_ns=%d\n", cpu.Nanoseconds())
}

// libraryWorkers is the library side's workers: all cores for many texts, one for a
// single text. EncodeBatch cuts one large text into parts on all cores, joining their
// ids at a cost in CPU (~7% since the parts are encoded into one array, ~25% before;
// tokenize's BenchmarkEncodeBatchWorkers/one-text) that Encode does not pay: the
// command is measured against the library's least CPU.
func libraryWorkers(texts []string) int {
	if len(texts) == 1 {
		return 1
	}
	return runtime.GOMAXPROCS(0)
}
