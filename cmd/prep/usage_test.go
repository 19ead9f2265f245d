package main

import (
	"fmt"
	"regexp"
	"runtime"
	"strings"
	"testing"

	"gptkit/prep"
)

func TestUsage(t *testing.T) {
	t.Parallel()
	names := prep.CorpusNames()
	tests := []struct {
		name    string
		args    []string
		code    int
		stderrs []string
	}{
		{"no arguments", nil, 2, append([]string{"usage: prep list", "prep custom", "prep NAME -d DIR"}, names...)},
		{"help", []string{"--help"}, 0, append([]string{"usage: prep list"}, names...)},
		{"flag first", []string{"-d", "x"}, 2, []string{"the corpus NAME comes first"}},
		{"unknown corpus", []string{"pile-99", "-d", "x"}, 2, append([]string{`no such corpus "pile-99"`, "prep list", "prep custom"}, names...)},
		{"missing -d", []string{"pile"}, 2, []string{"prep pile: -d DIR is required", "prep pile -h"}},
		{"custom missing -d", []string{"custom", "--input", "a.txt", "--name", "x"}, 2, []string{"prep custom: -d DIR is required"}},
		{"custom missing --input", []string{"custom", "--name", "x", "-d", "d"}, 2, []string{"--input is required"}},
		{"custom missing --name", []string{"custom", "--input", "a.txt", "-d", "d"}, 2, []string{"--name is required"}},
		{"custom --name with a slash", []string{"custom", "--input", "a.txt", "--name", "a/b", "-d", "d"}, 2, []string{"may not contain a slash"}},
		{"bad --on-error", []string{"pile", "-d", "d", "--on-error", "ignore"}, 2, []string{`--on-error is "ignore"`}},
		{"bad --max-error-rate", []string{"pile", "-d", "d", "--max-error-rate", "2"}, 2, []string{"--max-error-rate"}},
		{"bad --shard-size", []string{"pile", "-d", "d", "--shard-size", "big"}, 2, []string{"--shard-size"}},
		{"bad --workers", []string{"pile", "-d", "d", "--workers", "0"}, 2, []string{"--workers"}},
		{"--dest s3:// without a bucket", []string{"pile", "-d", "d", "--dest", "s3://"}, 2, []string{"--dest s3:// names no bucket or directory: want s3://BUCKET/PREFIX"}},
		{"--dest file:/// without a path", []string{"pile", "-d", "d", "--dest", "file:///"}, 2, []string{"--dest file:/// names no bucket or directory"}},
		{"bad --progress", []string{"pile", "-d", "d", "--progress", "loud"}, 2, []string{"--progress"}},
		{"unknown flag", []string{"pile", "-d", "d", "--frob"}, 2, []string{"-frob", "prep pile -h"}},
		{"stray argument", []string{"pile", "-d", "d", "extra"}, 2, []string{`unexpected argument "extra"`}},
		{"alias -h", []string{"pile_subset", "-h"}, 0, []string{"usage: prep pile-00"}},
		{"--slurm with --merge-parts", []string{"pile", "-d", "d", "--slurm", "--merge-parts"}, 2, []string{"drop --merge-parts"}},
		{"--slurm with --num-workers", []string{"pile", "-d", "d", "--slurm", "--num-workers", "3"}, 2, []string{"use --array-size W"}},
		{"bad --array-size", []string{"pile", "-d", "d", "--slurm", "--array-size", "0"}, 2, []string{"--array-size must be at least 1"}},
		{"--sbatch-args --array", []string{"pile", "-d", "d", "--slurm", "--array-size", "16", "--sbatch-args", "--partition=cpu --array=0-7"}, 2, []string{"--sbatch-args: --array=0-7 is set by prep --slurm", "use --array-size"}},
		{"--sbatch-args -a", []string{"pile", "-d", "d", "--slurm", "--sbatch-args", "-a 0-7 --time=1:00:00"}, 2, []string{"--sbatch-args: -a is set by prep --slurm"}},
		{"--sbatch-args --arr (abbreviated)", []string{"pile", "-d", "d", "--slurm", "--sbatch-args", "--arr=3"}, 2, []string{"--sbatch-args: --arr=3 is set by prep --slurm"}},
		{"--sbatch-args --chdir", []string{"pile", "-d", "d", "--slurm", "--sbatch-args", "--chdir=/scratch"}, 2, []string{"--chdir=/scratch is set by prep --slurm", "relative --input"}},
		{"--sbatch-args -o", []string{"pile", "-d", "d", "--slurm", "--sbatch-args", "-o /tmp/x.out"}, 2, []string{"-o is set by prep --slurm", "slurm/logs"}},
		{"--dry-run alone", []string{"pile", "-d", "d", "--dry-run"}, 2, []string{"--dry-run goes with --slurm"}},
		{"--parts 0", []string{"pile", "-d", "d", "--parts", "0"}, 2, []string{"--parts is 0, want 1 to --workers"}},
		{"--parts over --workers", []string{"pile", "-d", "d", "--parts", "3", "--workers", "2"}, 2, []string{"--parts is 3, want 1 to --workers (2)"}},
		{"--parts with --slurm", []string{"pile", "-d", "d", "--parts", "2", "--workers", "4", "--slurm"}, 2, []string{"--parts runs a partitioned run in this process"}},
		{"--parts with --num-workers", []string{"pile", "-d", "d", "--parts", "2", "--workers", "4", "--num-workers", "2", "--worker-index", "0"}, 2, []string{"--parts runs a partitioned run in this process"}},
		{"--worker-index alone", []string{"pile", "-d", "d", "--worker-index", "1"}, 2, []string{"--worker-index 1 needs --num-workers W"}},
		{"--worker-index too big", []string{"pile", "-d", "d", "--num-workers", "2", "--worker-index", "2"}, 2, []string{"worker index 2 (--worker-index) is not in [0, 2)"}},
		{"--merge-parts with an index", []string{"pile", "-d", "d", "--merge-parts", "--worker-index", "1"}, 2, []string{"drop --worker-index"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := runPrep(t, tt.args...)
			if code != tt.code || out != "" {
				t.Errorf("exit %d (want %d), stdout %q", code, tt.code, out)
			}
			hasAll(t, "stderr", errOut, tt.stderrs...)
		})
	}
}

// TestList: `prep list` names every corpus of the catalog on stdout.
func TestList(t *testing.T) {
	t.Parallel()
	code, out, errOut := runPrep(t, "list")
	if code != 0 || errOut != "" {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	hasAll(t, "prep list", out, prep.CorpusNames()...)
	for _, c := range prep.Catalog() {
		hasAll(t, "prep list", out, c.Files[0].Name)
	}
	// Like every command: -h is help, a stray argument a usage error.
	if code, out, errOut := runPrep(t, "list", "-h"); code != 0 || out != "" || !strings.Contains(errOut, "usage: prep list") {
		t.Errorf("prep list -h: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if code, out, _ := runPrep(t, "list", "--bogus"); code != 2 || out != "" {
		t.Errorf("prep list --bogus: exit %d, stdout %q", code, out)
	}
}

// helpFlags parses `PROG NAME -h` output into flag → default ("" where help prints
// none: an empty string, a switch that is off).
func helpFlags(t *testing.T, help string) map[string]string {
	t.Helper()
	re := regexp.MustCompile(`(?m)^  (--?[a-z0-9-]+)[^\n]*\n    \t([^\n]*)$`)
	def := regexp.MustCompile(`\(default ([^\n]*)\)$`)
	out := map[string]string{}
	for _, m := range re.FindAllStringSubmatch(help, -1) {
		out[m[1]] = ""
		if d := def.FindStringSubmatch(m[2]); d != nil {
			out[m[1]] = d[1]
		}
	}
	return out
}

// TestHelpListsEveryFlag: `prep pile -h` and `prep custom -h` exit 0 and list every flag
// with its default (none for an empty string or a switch that is off).
func TestHelpListsEveryFlag(t *testing.T) {
	t.Parallel()
	shared := map[string]string{
		"-d": "", "--dest": "", "--tokenizer": "", "--tokenizer-url": "", "--tokenizer-sha256": "",
		"--tokenizer-cache-dir": "", "--workers": fmt.Sprint(runtime.GOMAXPROCS(0)), "--parallel-downloads": "4",
		"--keep-downloads": "", "--text-key": `"text"`, "--shard-size": `"0"`, "--filter-set": "",
		"--on-error": `"skip"`, "--max-error-rate": "0.01", "--accept-truncated": "", "--overwrite": "", "--s3-endpoint": "$AWS_ENDPOINT_URL_S3, else AWS",
		"--s3-path-style": "", "--progress": `"auto"`,
		"--num-workers": "-1", "--worker-index": "-1", "--merge-parts": "", "--slurm": "",
		"--array-size": "16", "--sbatch-args": "", "--dry-run": "", "--parts": "1",
	}
	for _, tt := range []struct {
		args  []string
		usage string
		extra map[string]string
	}{
		{[]string{"pile", "-h"}, "usage: prep pile -d DIR [flags]", map[string]string{"--mirror": "", "--checksums": ""}},
		{[]string{"shakespeare", "--help"}, "usage: prep shakespeare -d DIR [flags]", map[string]string{"--mirror": "", "--checksums": "", "--download": ""}},
		{[]string{"custom", "-h"}, "usage: prep custom --input", map[string]string{"--input": "", "--name": "", "--append-eod": "true"}},
	} {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			code, out, errOut := runPrep(t, tt.args...)
			if code != 0 || out != "" {
				t.Fatalf("exit %d, stdout %q", code, out)
			}
			hasAll(t, "help", errOut, tt.usage)
			got := helpFlags(t, errOut)
			want := map[string]string{}
			for k, v := range shared {
				want[k] = v
			}
			for k, v := range tt.extra {
				want[k] = v
			}
			for flag, def := range want {
				if g, ok := got[flag]; !ok || g != def {
					t.Errorf("help: %s has default %q (listed: %v), want %q", flag, g, ok, def)
				}
			}
			for flag := range got {
				if _, ok := want[flag]; !ok {
					t.Errorf("help lists %s, which this test does not know: add it", flag)
				}
			}
			if n := len(regexp.MustCompile(`(?m)^  -`).FindAllString(errOut, -1)); n != len(got) {
				t.Errorf("help lists %d flags, %d of them parsed:\n%s", n, len(got), errOut)
			}
		})
	}
}
