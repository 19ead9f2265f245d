package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"gptkit/internal/miniotest"
	"gptkit/internal/slurmtest"
	"gptkit/shards"
	"gptkit/storage"
)

// The SLURM tests run `prep --slurm` against a real one-node cluster (internal/slurmtest).
// The jobs it writes exec the prep executable, which in a test is this test binary: with
// GPTKIT_PREP_MAIN=1 in the environment sbatch hands the jobs, TestMain makes it prep.
const (
	prepMainEnv = "GPTKIT_PREP_MAIN"
	// dieTaskEnv makes the array task of that SLURM_ARRAY_TASK_ID SIGKILL itself right
	// after its first shard is committed and journaled.
	dieTaskEnv = "GPTKIT_PREP_DIE_TASK"
)

// prepMain is main for a test binary run as prep.
func prepMain() int {
	if task := os.Getenv(dieTaskEnv); task != "" && task == os.Getenv("SLURM_ARRAY_TASK_ID") {
		testShardHook = func(shards.ShardInfo) {
			fmt.Fprintln(os.Stderr, "test: killing this task after its first shard")
			syscall.Kill(os.Getpid(), syscall.SIGKILL)
		}
	}
	return run(context.Background(), os.Args[1:], os.Stdout, os.Stderr)
}

func TestSlurmArrayJob(t *testing.T)   { testSlurm(t, false) }
func TestSlurmArrayJobS3(t *testing.T) { testSlurm(t, true) }

// testSlurm: `prep custom --slurm` submits a 4-task array job and its merge job; task 2 is
// killed after its first shard, so the merge fails, naming part 2 and the sbatch line that
// reruns it. Rerun (with a finished task), task 2 keeps its shard and finishes, task 0 is
// skipped, and the merge makes the dataset of a single run. With s3, the dataset goes to
// MinIO (--dest s3://...); the downloads directory stays local.
func testSlurm(t *testing.T, s3 bool) {
	if testing.Short() {
		t.Skip("runs a SLURM cluster")
	}
	c := slurmtest.Start(t)
	c.Setenv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	inputs, want := partsCorpus(t, t.TempDir())
	data := t.TempDir()
	args := []string{"custom", "--input", inputs[0], inputs[1], "--name", "c", "-d", data, "--tokenizer", gpt2Dir(t),
		"--shard-size", "2KiB", "--progress", "off", "--workers", "1"}
	out := filepath.Join(data, "c")
	var st storage.Store
	if s3 {
		srv := miniotest.Start(t)
		srv.Setenv(t)
		bucket := srv.NewBucket(t)
		args = append(args, "--dest", "s3://"+bucket+"/runs")
		out = "s3://" + bucket + "/runs/c"
		var err error
		if st, err = storage.Open(ctx, out, storage.Options{}); err != nil {
			t.Fatal(err)
		}
	} else {
		st = dirStore(t, out)
	}
	t.Setenv(prepMainEnv, "1")
	t.Setenv(dieTaskEnv, "2")

	stdout, _ := mustPrep(t, append(args, "--slurm", "--array-size", "4")...)
	ids := regexp.MustCompile(`(?m)^array job (\d+): 4 tasks .*\nmerge job (\d+): runs after it`).FindStringSubmatch(stdout)
	if ids == nil {
		t.Fatalf("--slurm printed %q", stdout)
	}
	array, merge := ids[1], ids[2]
	hasAll(t, "stdout", stdout, fmt.Sprintf("follow: squeue -j %s,%s", array, merge))
	jobs := wait(t, ctx, c, array, merge)
	logs := filepath.Join(data, "c", "slurm", "logs")
	for _, j := range jobs {
		switch {
		case j.ID == merge:
			if j.State != "FAILED" {
				t.Errorf("the merge: %s (%s), want FAILED", j.State, j.ExitCode)
			}
			log := readLog(t, filepath.Join(logs, "merge-"+merge+".out"))
			hasAll(t, "the merge's log", log, "1 of 4 parts are not finished", "part 2 (parts/part-00002-of-00004: started, unfinished",
				"sbatch --array=2 "+filepath.Join(data, "c", "slurm", "tokenize.sbatch"))
		case j.ArrayTaskID == "2":
			if j.State == "COMPLETED" {
				t.Errorf("task 2 was to be killed: %+v", j)
			}
		default:
			if j.State != "COMPLETED" {
				t.Errorf("task %s: %s (%s); its log:\n%s", j.ArrayTaskID, j.State, j.ExitCode, readLog(t, filepath.Join(logs, fmt.Sprintf("tokenize-%s_%s.out", array, j.ArrayTaskID))))
			}
		}
	}
	if _, err := shards.ReadManifest(ctx, st, ""); err == nil {
		t.Fatal("a manifest was written with part 2 missing")
	}

	// Rerun task 2, and task 0, which is finished.
	t.Setenv(dieTaskEnv, "")
	rerun, err := c.Sbatch(ctx, "--array=0,2", filepath.Join(data, "c", "slurm", "tokenize.sbatch"))
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range wait(t, ctx, c, rerun) {
		log := readLog(t, filepath.Join(logs, fmt.Sprintf("tokenize-%s_%s.out", rerun, j.ArrayTaskID)))
		if j.State != "COMPLETED" {
			t.Fatalf("rerun of task %s: %s; its log:\n%s", j.ArrayTaskID, j.State, log)
		}
		if j.ArrayTaskID == "0" {
			hasAll(t, "task 0's rerun log", log, "part already complete: not redone")
		} else {
			hasAll(t, "task 2's rerun log", log, "msg=resuming", "shards_kept=1")
		}
	}
	merged, err := c.Sbatch(ctx, filepath.Join(data, "c", "slurm", "merge.sbatch"))
	if err != nil {
		t.Fatal(err)
	}
	if j := wait(t, ctx, c, merged)[0]; j.State != "COMPLETED" {
		t.Fatalf("the merge: %s; its log:\n%s", j.State, readLog(t, filepath.Join(logs, "merge-"+merged+".out")))
	}
	hasAll(t, "the merge's log", readLog(t, filepath.Join(logs, "merge-"+merged+".out")), out+"/manifest.json: ")

	d, err := shards.OpenDataset(ctx, st, "", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	got := make([][]int, d.Len())
	for i := range got {
		got[i] = d.Tokens(int64(i))
	}
	compareDocs(t, "the array job's dataset", got, want)
	if probs, err := shards.Verify(ctx, st, ""); err != nil || len(probs) > 0 {
		t.Fatalf("verify: %v %v", probs, err)
	}
}

// wait waits for the jobs, failing the test with the cluster's logs if they do not end.
func wait(t *testing.T, ctx context.Context, c *slurmtest.Cluster, ids ...string) []slurmtest.Job {
	t.Helper()
	jobs, err := c.Wait(ctx, ids...)
	if err != nil {
		t.Fatalf("%v\n%s", err, c.Logs())
	}
	return jobs
}

func readLog(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("a job's log: %v", err)
	}
	return strings.TrimSpace(string(data))
}

// TestSlurmQuoting: a data directory whose path has a blank and a # in it, and
// --sbatch-args with a quoted value: the #SBATCH lines split them ("#SBATCH
// --output=DIR 7/..." wrote the logs elsewhere, "--comment='a b'" became two
// lines), and the comments and printed commands left the paths unquoted.
func TestSlurmQuoting(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a SLURM cluster")
	}
	c := slurmtest.Start(t)
	c.Setenv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	inputs, want := partsCorpus(t, t.TempDir())
	data := filepath.Join(t.TempDir(), "data 7#x")
	t.Setenv(prepMainEnv, "1")
	stdout, _ := mustPrep(t, "custom", "--input", inputs[0], inputs[1], "--name", "c", "-d", data, "--tokenizer", gpt2Dir(t),
		"--shard-size", "2KiB", "--progress", "off", "--workers", "1", "--slurm", "--array-size", "2", "--sbatch-args", `--comment='a b' --time "0:10:00"`)
	ids := regexp.MustCompile(`(?m)^array job (\d+): 2 tasks .*\nmerge job (\d+): runs after it`).FindStringSubmatch(stdout)
	if ids == nil {
		t.Fatalf("--slurm printed %q", stdout)
	}
	script, err := os.ReadFile(filepath.Join(data, "c", "slurm", "tokenize.sbatch"))
	if err != nil {
		t.Fatal(err)
	}
	hasAll(t, "the array job's script", string(script), "#SBATCH --comment=\"a b\"\n", "#SBATCH --time 0:10:00\n",
		`#SBATCH --output="`+filepath.Join(data, "c", "slurm", "logs")+`/tokenize-%A_%a.out"`, "sbatch --array=I '"+filepath.Join(data, "c", "slurm", "tokenize.sbatch")+"'")
	show, err := c.Command(ctx, "scontrol", "show", "job", ids[1]).Output()
	if err != nil {
		t.Fatal(err)
	}
	hasAll(t, "scontrol show job", string(show), "Comment=a b")
	for _, j := range wait(t, ctx, c, ids[1], ids[2]) {
		if j.State != "COMPLETED" {
			t.Errorf("job %s (task %q): %s (%s)\n%s", j.ID, j.ArrayTaskID, j.State, j.ExitCode, c.Logs())
		}
	}
	logs, _ := filepath.Glob(filepath.Join(data, "c", "slurm", "logs", "*.out"))
	if len(logs) != 3 {
		t.Errorf("logs %q, want the 2 tasks' and the merge's", logs)
	}
	d, err := shards.OpenDataset(ctx, dirStore(t, filepath.Join(data, "c")), "", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	got := make([][]int, d.Len())
	for i := range got {
		got[i] = d.Tokens(int64(i))
	}
	compareDocs(t, "the array job's dataset", got, want)
}

// TestSbatchLines: --sbatch-args split as a shell splits them, each value written as
// sbatch reads an #SBATCH line.
func TestSbatchLines(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{"--partition=cpu -t 60", []string{"#SBATCH --partition=cpu", "#SBATCH -t 60"}},
		{`--comment='a b' -J "x y" --mail-user=me@x.org`, []string{`#SBATCH --comment="a b"`, `#SBATCH -J "x y"`, "#SBATCH --mail-user=me@x.org"}},
		{`--comment="say \"hi\" #1" --exclusive`, []string{`#SBATCH --comment="say \"hi\" #1"`, "#SBATCH --exclusive"}},
		{`--comment=a\ b`, []string{`#SBATCH --comment="a b"`}},
		{"", nil},
	} {
		got, err := sbatchLines(tc.in)
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("%q: %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
	if _, err := sbatchLines(`--comment='a b`); err == nil || !strings.Contains(err.Error(), "is not closed") {
		t.Errorf("an unclosed quote: %v", err)
	}
}

// FuzzShellWords: the splitter never panics, and the words it gives, shell-quoted and
// joined, split into the same words again.
func FuzzShellWords(f *testing.F) {
	for _, s := range []string{"--partition=cpu -t 60", `--comment='a b' -J "x \"y\""`, `a\ b\\c`, `'unclosed`, `"`, "\t\n x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		words, err := shellWords(s)
		if err != nil {
			return
		}
		quoted := make([]string, len(words))
		for i, w := range words {
			quoted[i] = shellQuote(w)
		}
		again, err := shellWords(strings.Join(quoted, " "))
		if err != nil || !slices.Equal(again, words) {
			t.Fatalf("%q: %q, quoted %q, split again %q, %v", s, words, quoted, again, err)
		}
	})
}
