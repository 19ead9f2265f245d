package slurmtest

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"time"
)

// Job is one job, or one task of an array job, as `scontrol show job` describes it.
type Job struct {
	ID          string // JobId: each array task has its own
	ArrayJobID  string // the array's id ("" for a plain job)
	ArrayTaskID string // the task's index ("" for a plain job; "2-3" for tasks not started yet)
	Name        string
	State       string // PENDING, RUNNING, COMPLETED, FAILED, CANCELLED, ...
	Reason      string // why it is pending (Dependency, DependencyNeverSatisfied, ...)
	ExitCode    string // "status:signal", e.g. "0:0", "1:0", "0:9"
	StdOut      string
}

// Done reports whether the job will not run any more: finished in any way, or pending
// on a dependency that can no longer be satisfied.
func (j Job) Done() bool {
	switch j.State {
	case "PENDING":
		return j.Reason == "DependencyNeverSatisfied"
	case "RUNNING", "CONFIGURING", "COMPLETING", "REQUEUED", "RESIZING", "SUSPENDED", "STAGE_OUT", "SIGNALING", "STOPPED", "REQUEUE_HOLD", "REQUEUE_FED", "RESV_DEL_HOLD":
		return false
	}
	return true
}

// Sbatch submits a batch job (sbatch --parsable ARGS...) and returns its id.
func (c *Cluster) Sbatch(ctx context.Context, args ...string) (string, error) {
	out, err := c.Command(ctx, "sbatch", append([]string{"--parsable"}, args...)...).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("slurmtest: sbatch %s: %v: %s", strings.Join(args, " "), err, out)
	}
	id, _, _ := strings.Cut(strings.TrimSpace(string(out)), ";") // "ID" or "ID;cluster"
	return id, nil
}

var field = regexp.MustCompile(`(\w+)=(\S*)`)

// Jobs describes the jobs with the given ids (an array job's id lists all its tasks).
func (c *Cluster) Jobs(ctx context.Context, ids ...string) ([]Job, error) {
	var jobs []Job
	for _, id := range ids {
		out, err := c.Command(ctx, "scontrol", "show", "job", "-o", id).CombinedOutput()
		if err != nil {
			return nil, fmt.Errorf("slurmtest: scontrol show job %s: %v: %s", id, err, out)
		}
		for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			if strings.TrimSpace(line) == "" {
				continue
			}
			var j Job
			for _, m := range field.FindAllStringSubmatch(line, -1) {
				switch v := m[2]; m[1] {
				case "JobId":
					j.ID = v
				case "ArrayJobId":
					j.ArrayJobID = v
				case "ArrayTaskId":
					j.ArrayTaskID = v
				case "JobName":
					j.Name = v
				case "JobState":
					j.State = v
				case "Reason":
					j.Reason = v
				case "ExitCode":
					j.ExitCode = v
				case "StdOut":
					j.StdOut = v
				}
			}
			jobs = append(jobs, j)
		}
	}
	return jobs, nil
}

// Wait polls the jobs until every one is Done and returns them; ctx bounds the wait.
func (c *Cluster) Wait(ctx context.Context, ids ...string) ([]Job, error) {
	for {
		jobs, err := c.Jobs(ctx, ids...)
		if err != nil {
			return nil, err
		}
		done := true
		for _, j := range jobs {
			done = done && j.Done()
		}
		if done {
			return jobs, nil
		}
		select {
		case <-ctx.Done():
			return jobs, fmt.Errorf("slurmtest: jobs %s not done: %w (%+v)", strings.Join(ids, ","), ctx.Err(), jobs)
		case <-time.After(100 * time.Millisecond):
		}
	}
}
