package slurmtest

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestArrayJob starts a cluster and runs a 4-task array job and a job that depends on
// it: the array-job environment and the dependency are what the batch tests rely on.
func TestArrayJob(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a SLURM cluster")
	}
	c := Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	out := t.TempDir()
	array, err := c.Sbatch(ctx, "--array=0-3", "--output="+filepath.Join(out, "task-%a.out"),
		"--wrap", "echo $SLURM_ARRAY_TASK_ID $SLURM_ARRAY_TASK_COUNT $SLURM_ARRAY_TASK_MIN $SLURM_ARRAY_TASK_MAX")
	if err != nil {
		t.Fatal(err)
	}
	after, err := c.Sbatch(ctx, "--dependency=afterok:"+array, "--output="+filepath.Join(out, "after.out"), "--wrap", "exit 3")
	if err != nil {
		t.Fatal(err)
	}
	jobs, err := c.Wait(ctx, array, after)
	if err != nil {
		t.Fatalf("%v\n%s", err, c.Logs())
	}
	if len(jobs) != 5 {
		t.Fatalf("got %d jobs, want 4 tasks and 1: %+v", len(jobs), jobs)
	}
	for _, j := range jobs {
		want, code := "COMPLETED", "0:0"
		if j.ID == after {
			want, code = "FAILED", "3:0"
		}
		if j.State != want || j.ExitCode != code {
			t.Errorf("job %s (task %q): state %s exit %s, want %s %s", j.ID, j.ArrayTaskID, j.State, j.ExitCode, want, code)
		}
	}
	for i, id := range []string{"0", "1", "2", "3"} {
		data, err := os.ReadFile(filepath.Join(out, "task-"+id+".out"))
		if err != nil {
			t.Fatal(err)
		}
		if got, want := strings.TrimSpace(string(data)), id+" 4 0 3"; got != want {
			t.Errorf("task %d printed %q, want %q", i, got, want)
		}
	}
}
