package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"gptkit/shards"
)

// partsCorpus writes a JSONL file (cut into byte ranges across parts) and a .jsonl.zst
// file (read whole by one part) and returns their paths and the documents a run makes.
func partsCorpus(t *testing.T, dir string) (inputs []string, want [][]int) {
	t.Helper()
	tok := gpt2(t)
	a, b := genPile(t, 400, 21), genPile(t, 150, 22)
	inputs = []string{writeFile(t, dir, "a.jsonl", jsonl(a)), writeFile(t, dir, "b.jsonl.zst", zst(t, jsonl(b)))}
	return inputs, encodeAll(tok, append(texts(a, ""), texts(b, "")...), tok.EOD())
}

// TestPartitionedCustom: `prep custom` as the three tasks of an array job (numbered by
// flags, or by AWS Batch's environment), then --merge-parts, makes a single run's
// dataset; the merge refuses, naming the part, while one is missing.
func TestPartitionedCustom(t *testing.T) {
	inputs, want := partsCorpus(t, t.TempDir())
	data := t.TempDir()
	args := []string{"custom", "--input", inputs[0], inputs[1], "--name", "c", "-d", data, "--tokenizer", gpt2Dir(t),
		"--shard-size", "2KiB", "--progress", "off", "--workers", "2"}
	ds := filepath.Join(data, "c")
	for _, i := range []int{0, 2} {
		out, errOut := mustPrep(t, append(args, "--num-workers", "3", "--worker-index", fmt.Sprint(i))...)
		hasAll(t, "stdout", out, fmt.Sprintf("%s/%s/manifest.json: ", ds, shards.PartDir(i, 3)))
		hasAll(t, "stderr", errOut, "--merge-parts")
	}
	code, _, errOut := runPrep(t, append(args, "--merge-parts")...)
	if code != 1 || strings.Count(errOut, "\n") != 1 {
		t.Fatalf("merge with part 1 missing: exit %d, %q", code, errOut)
	}
	hasAll(t, "stderr", errOut, "1 of 3 parts are not finished", "part 1 (parts/part-00001-of-00003: not started)", "--worker-index I, for I in 1")
	noManifest(t, ds)

	t.Setenv("AWS_BATCH_JOB_ARRAY_INDEX", "1")
	t.Setenv("AWS_BATCH_JOB_ARRAY_SIZE", "3")
	out, _ := mustPrep(t, args...)
	hasAll(t, "stdout", out, fmt.Sprintf("%s/%s/manifest.json: ", ds, shards.PartDir(1, 3)))
	os.Unsetenv("AWS_BATCH_JOB_ARRAY_INDEX")
	os.Unsetenv("AWS_BATCH_JOB_ARRAY_SIZE")
	if _, err := os.Stat(filepath.Join(ds, "prep-report-part-00001-of-00003.json")); err != nil {
		t.Errorf("part 1's report: %v", err)
	}

	// A merge from another command line (another --shard-size: the job whose tasks
	// refused the old parts) does not publish them.
	other := append(append([]string(nil), args...), "--merge-parts")
	other[slices.Index(other, "2KiB")] = "4KiB"
	if code, _, errOut := runPrep(t, other...); code != 1 || !strings.Contains(errOut, "other settings") {
		t.Fatalf("merge with other settings: exit %d: %s", code, errOut)
	}
	noManifest(t, ds)

	out, _ = mustPrep(t, append(args, "--merge-parts")...)
	hasAll(t, "stdout", out, ds+"/manifest.json: ")
	compareDocs(t, "merged parts", datasetDocs(t, ds), want)
	if m := readManifest(t, ds); len(m.Shards) < 6 || !strings.HasPrefix(m.Shards[0].Prefix, "parts/part-00000-of-00003/c_text_document") {
		t.Errorf("merged manifest: %d shards, first %+v", len(m.Shards), m.Shards[0])
	}
	// Done: every task, and the merge, has nothing left to do.
	out, _ = mustPrep(t, append(args, "--num-workers", "3", "--worker-index", "2")...)
	hasAll(t, "stdout", out, ds+"/manifest.json: ", "already complete")
	_, errOut = mustPrep(t, append(args, "--merge-parts")...)
	hasAll(t, "stderr", errOut, "already merged from its 3 parts")
}

// TestSlurmDryRun: --slurm --dry-run prints the array job and the merge job, which run
// this command's corpus and flags as parts; nothing is written or submitted.
func TestSlurmDryRun(t *testing.T) {
	data := t.TempDir()
	out, _ := mustPrep(t, "custom", "--input", "in.jsonl", "--name", "c", "-d", data, "--tokenizer", "gpt2", "--shard-size", "1GiB",
		"--slurm", "--array-size", "8", "--sbatch-args", "--partition=cpu -t 60 --cpus-per-task=16", "--dry-run", "--overwrite")
	exe, _ := os.Executable()
	cwd, _ := os.Getwd()
	slurm := filepath.Join(data, "c", "slurm")
	hasAll(t, "stdout", out,
		"# "+filepath.Join(slurm, "tokenize.sbatch"), "#SBATCH --array=0-7", "#SBATCH --job-name=prep-c\n",
		"#SBATCH --output="+filepath.Join(slurm, "logs")+"/tokenize-%A_%a.out", "#SBATCH --chdir="+cwd,
		"#SBATCH --partition=cpu\n#SBATCH -t 60\n#SBATCH --cpus-per-task=16\n",
		"exec "+shellQuote(exe)+" custom -d="+data+" --input=in.jsonl --name=c --shard-size=1GiB --tokenizer=gpt2 --num-workers=8\n",
		"# "+filepath.Join(slurm, "merge.sbatch"), "#SBATCH --job-name=prep-c-merge",
		"--tokenizer=gpt2 --num-workers=8 --merge-parts\n",
		"sbatch --parsable --dependency=afterany:ARRAY_JOB_ID "+filepath.Join(slurm, "merge.sbatch"))
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "exec ") && (strings.Contains(line, "--slurm") || strings.Contains(line, "--dry-run") || strings.Contains(line, "--array-size") || strings.Contains(line, "--sbatch-args") || strings.Contains(line, "--overwrite")) {
			t.Errorf("a job's command line keeps --slurm's own flags: %s", line)
		}
	}
	if _, err := os.Stat(filepath.Join(data, "c")); !os.IsNotExist(err) {
		t.Errorf("--dry-run wrote %s: %v", filepath.Join(data, "c"), err)
	}
	for _, tc := range []struct{ in, want string }{{"a", "a"}, {"it's", `'it'\''s'`}, {"", "''"}, {"a b", "'a b'"}, {"--x=/p/q", "--x=/p/q"}} {
		if got := shellQuote(tc.in); got != tc.want {
			t.Errorf("shellQuote(%q) = %s, want %s", tc.in, got, tc.want)
		}
	}
}

// TestMergePartsChecksErrorRate: the parts of an array job each check their own share
// of bad records; the merge checks the whole run's, from the counts the parts'
// manifests keep, and fails over --max-error-rate (the merged dataset is written), as a
// single run would; a higher --max-error-rate accepts it.
func TestMergePartsChecksErrorRate(t *testing.T) {
	dir := t.TempDir()
	recs := genPile(t, 1000, 23)
	input := writeFile(t, dir, "bad.jsonl", corpusWithBadLines(recs))
	data := t.TempDir()
	args := []string{"custom", "--input", input, "--name", "c", "-d", data, "--tokenizer", gpt2Dir(t),
		"--progress", "off", "--workers", "2", "--max-error-rate", "0.5"}
	for i := range 2 {
		mustPrep(t, append(args, "--num-workers", "2", "--worker-index", fmt.Sprint(i))...)
	}
	ds := filepath.Join(data, "c")
	// A task rerun over its finished part keeps the part's report, examples and all.
	report := filepath.Join(ds, "prep-report-part-00000-of-00002.json")
	before, err := os.ReadFile(report)
	if err != nil || !strings.Contains(string(before), `"line": `) {
		t.Fatalf("part 0's report: %v\n%s", err, before)
	}
	mustPrep(t, append(args, "--num-workers", "2", "--worker-index", "0")...)
	if after, err := os.ReadFile(report); err != nil || string(after) != string(before) {
		t.Fatalf("part 0's report after its rerun: %v\n%s\nwant\n%s", err, after, before)
	}
	// Rerun with --on-error fail, the task fails: its part was made with bad records.
	if code, _, errOut := runPrep(t, append(args, "--num-workers", "2", "--worker-index", "0", "--on-error", "fail")...); code != 1 ||
		!strings.Contains(lastLine(errOut), "--on-error fail accepts none") {
		t.Fatalf("part 0 rerun with --on-error fail: exit %d, want 1; stderr:\n%s", code, errOut)
	}
	code, out, errOut := runPrep(t, append(args, "--merge-parts", "--max-error-rate", "0.001")...)
	if code != 1 {
		t.Fatalf("merge: exit %d, want 1; stderr:\n%s", code, errOut)
	}
	hasAll(t, "merge stdout", out, ds+"/manifest.json: ")
	hasAll(t, "the merge's error line", lastLine(errOut), fmt.Sprintf("%d of %d records were bad", len(badLines), len(recs)+len(badLines)),
		filepath.Join(ds, "prep-report-part-*.json"))
	if m := readManifest(t, ds); m.Part != nil || len(m.Records) != 1 || m.Records[0].Bad != int64(len(badLines)) {
		t.Fatalf("merged manifest: part %v, records %+v; want %d bad records", m.Part, m.Records, len(badLines))
	}
	mustPrep(t, append(args, "--merge-parts")...)
}

// TestSlurmOverwriteUnpublishes: --slurm --overwrite replaces the dataset once, at
// submission (its scripts do not carry --overwrite, which would redo finished parts
// on every rerun): the merged manifest and the parts' manifests go, so the tasks
// make every part again and the merge publishes theirs.
func TestSlurmOverwriteUnpublishes(t *testing.T) {
	inputs, _ := partsCorpus(t, t.TempDir())
	data := t.TempDir()
	args := []string{"custom", "--input", inputs[0], inputs[1], "--name", "c", "-d", data, "--tokenizer", gpt2Dir(t),
		"--shard-size", "2KiB", "--progress", "off", "--workers", "2"}
	ds := filepath.Join(data, "c")
	for i := range 2 {
		mustPrep(t, append(args, "--num-workers", "2", "--worker-index", fmt.Sprint(i))...)
	}
	mustPrep(t, append(args, "--merge-parts")...)
	t.Setenv("PATH", t.TempDir()) // no sbatch: the submission fails after the replacing
	if code, _, errOut := runPrep(t, append(args, "--slurm", "--array-size", "2", "--overwrite")...); code != 1 || !strings.Contains(errOut, "sbatch is not on PATH") {
		t.Fatalf("--slurm --overwrite without sbatch: exit %d: %s", code, errOut)
	}
	noManifest(t, ds)
	for i := range 2 {
		if _, err := os.Stat(filepath.Join(ds, shards.PartDir(i, 2), shards.ManifestName)); err == nil {
			t.Errorf("part %d's manifest kept", i)
		}
	}
	_, errOut := mustPrep(t, append(args, "--num-workers", "2", "--worker-index", "0")...)
	if strings.Contains(errOut, "already complete") {
		t.Errorf("a task after --overwrite did not make its part again: %s", errOut)
	}
}

// TestPartsDamagedRedoesOnlyThatPart: a merged dataset of --parts 2 that lost a shard of
// part 1 is made again by redoing part 1 only; part 0's shards are kept as they are
// (every part was once made again).
func TestPartsDamagedRedoesOnlyThatPart(t *testing.T) {
	inputs, want := partsCorpus(t, t.TempDir())
	data := t.TempDir()
	args := []string{"custom", "--input", inputs[0], inputs[1], "--name", "c", "-d", data, "--tokenizer", gpt2Dir(t),
		"--shard-size", "2KiB", "--progress", "off", "--workers", "2", "--parts", "2"}
	mustPrep(t, args...)
	ds := filepath.Join(data, "c")
	part0, _ := filepath.Glob(filepath.Join(ds, shards.PartDir(0, 2), "*.bin"))
	part1, _ := filepath.Glob(filepath.Join(ds, shards.PartDir(1, 2), "*.bin"))
	if len(part0) == 0 || len(part1) == 0 {
		t.Fatalf("parts' shards: %v, %v", part0, part1)
	}
	old := time.Now().Add(-time.Hour)
	for _, f := range part0 {
		os.Chtimes(f, old, old)
	}
	os.Remove(part1[0])
	_, errOut := mustPrep(t, args...)
	hasAll(t, "stderr", errOut, "damaged")
	compareDocs(t, "remade", datasetDocs(t, ds), want)
	for _, f := range part0 {
		if fi, err := os.Stat(f); err != nil || fi.ModTime().After(old.Add(time.Minute)) {
			t.Errorf("part 0's %s was made again (%v)", filepath.Base(f), err)
		}
	}
}
