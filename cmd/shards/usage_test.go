package main

import (
	"strings"
	"testing"
)

func TestUsage(t *testing.T) {
	if code, _, errOut := runShards(t); code != 2 || !strings.Contains(errOut, "usage: shards COMMAND") {
		t.Errorf("no command: exit %d, %q", code, errOut)
	}
	if code, _, errOut := runShards(t, "frobnicate"); code != 2 || !strings.Contains(errOut, `unknown command "frobnicate"`) {
		t.Errorf("unknown command: exit %d, %q", code, errOut)
	}
	for _, h := range []string{"-h", "--help", "help"} {
		if code, out, errOut := runShards(t, h); code != 0 || out != "" || !strings.Contains(errOut, "Commands:") {
			t.Errorf("%s: exit %d, stdout %q", h, code, out)
		}
	}

	// -h lists every flag (with its default where it has one: internal/cli's test), on stderr.
	flags := map[string][]string{
		"info":        {"json", "allow-merged-doc-idx", "s3-endpoint", "s3-path-style"},
		"verify":      {"strict", "allow-merged-doc-idx", "s3-endpoint", "s3-path-style", "cache-dir"},
		"cat":         {"doc", "decode", "tokenizer", "tokenizer-url", "tokenizer-sha256", "tokenizer-cache-dir", "allow-merged-doc-idx", "s3-endpoint", "s3-path-style", "cache-dir"},
		"merge":       {"prefix", "allow-merged-doc-idx", "s3-endpoint", "s3-path-style"},
		"merge-parts": {"num-workers", "overwrite", "s3-endpoint", "s3-path-style"},
		"convert":     {"to", "from", "out", "name", "split", "first-index", "shard-tokens", "split-at-eod", "tokenizer", "tokenizer-url", "tokenizer-sha256", "tokenizer-cache-dir", "allow-merged-doc-idx", "s3-endpoint", "s3-path-style", "cache-dir"},
	}
	for cmd, names := range flags {
		code, out, errOut := runShards(t, cmd, "-h")
		if code != 0 || out != "" || !strings.HasPrefix(errOut, "usage: shards "+cmd+" ") {
			t.Errorf("%s -h: exit %d, stdout %q, stderr %q", cmd, code, out, errOut)
		}
		if n := strings.Count(errOut, "\n  --"); n != len(names) {
			t.Errorf("%s -h lists %d flags, want %d:\n%s", cmd, n, len(names), errOut)
		}
		for _, name := range names {
			i := strings.Index(errOut, "\n  --"+name)
			if i < 0 {
				t.Errorf("%s -h: --%s missing", cmd, name)
			}
		}
	}

	dir := t.TempDir()
	for _, args := range [][]string{
		{"info"}, {"info", dir, dir}, {"info", dir, "--bogus"},
		{"verify"}, {"verify", "--json", dir},
		{"cat"}, {"cat", dir, "--doc", "x"},
		{"merge"}, {"merge", dir, dir, "--prefix", "a/b"},
		{"merge-parts"}, {"merge-parts", dir, dir}, {"merge-parts", dir, "--num-workers", "-1"},
		{"convert"},
	} {
		code, out, errOut := runShards(t, args...)
		if code != 2 || out != "" || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, "-h' for usage)") {
			t.Errorf("%v: exit %d, stdout %q, stderr %q", args, code, out, errOut)
		}
	}
	// Everything after -- is an argument.
	if code, _, errOut := runShards(t, "info", "--", "--json"); code != 1 || !strings.Contains(errOut, "--json: no such dataset directory") {
		t.Errorf("info -- --json: exit %d, %q", code, errOut)
	}
}
