package pipelines

import (
	"fmt"
	"strconv"
	"strings"
)

// ArrayTask is the part of a partitioned run one process does: part Index (from 0) of
// Count, and where each number came from (a flag or an environment variable), for logs
// and messages.
type ArrayTask struct {
	Index, Count         int
	IndexFrom, CountFrom string
}

// The array-job environments ResolveArrayTask reads, in the order it looks at them.
const (
	// SLURM: the task's id in an array submitted with --array=0-(W-1), and the number
	// of tasks (SLURM_ARRAY_TASK_MAX+1 when SLURM_ARRAY_TASK_COUNT is missing and the
	// ids start at 0).
	EnvSlurmTaskID    = "SLURM_ARRAY_TASK_ID"
	EnvSlurmTaskCount = "SLURM_ARRAY_TASK_COUNT"
	EnvSlurmTaskMin   = "SLURM_ARRAY_TASK_MIN"
	EnvSlurmTaskMax   = "SLURM_ARRAY_TASK_MAX"
	// Kubernetes Indexed Jobs: the pod's index; the count is the Job's completions,
	// which the pod is not told: pass --num-workers.
	EnvK8sIndex = "JOB_COMPLETION_INDEX"
	// AWS Batch array jobs: the child's index and the array's size.
	EnvAWSBatchIndex = "AWS_BATCH_JOB_ARRAY_INDEX"
	EnvAWSBatchSize  = "AWS_BATCH_JOB_ARRAY_SIZE"
)

// ResolveArrayTask works out which part of a partitioned run this process does, from its
// --num-workers and --worker-index flags (negative: not given) and, where they are not
// given, the array-job environment (getenv is os.Getenv): SLURM_ARRAY_TASK_ID and
// SLURM_ARRAY_TASK_COUNT, JOB_COMPLETION_INDEX (with --num-workers), or
// AWS_BATCH_JOB_ARRAY_INDEX and AWS_BATCH_JOB_ARRAY_SIZE. ok is false for a run that is
// not partitioned: --num-workers 0, or neither flags nor an array-job environment.
//
// A flag wins over the environment: a rerun of one task of a SLURM array (sbatch
// --array=2) sees SLURM_ARRAY_TASK_COUNT=1, so scripts pass --num-workers explicitly
// and let the index come from SLURM_ARRAY_TASK_ID.
func ResolveArrayTask(numWorkers, workerIndex int, getenv func(string) string) (task ArrayTask, ok bool, err error) {
	if numWorkers == 0 {
		if workerIndex >= 0 {
			return task, false, fmt.Errorf("--worker-index %d needs --num-workers W (at least 1)", workerIndex)
		}
		return task, false, nil // explicitly not partitioned, whatever the environment
	}
	if workerIndex >= 0 && numWorkers < 0 {
		return task, false, fmt.Errorf("--worker-index %d needs --num-workers W", workerIndex)
	}
	envIndex, envCount, err := arrayEnv(getenv)
	if err != nil {
		return task, false, err
	}
	switch {
	case workerIndex >= 0:
		task.Index, task.IndexFrom = workerIndex, "--worker-index"
	case envIndex.from != "":
		task.Index, task.IndexFrom = envIndex.n, envIndex.from
	case numWorkers > 0:
		return task, false, fmt.Errorf("--num-workers %d needs --worker-index I, or an array job's environment (%s, %s or %s)",
			numWorkers, EnvSlurmTaskID, EnvK8sIndex, EnvAWSBatchIndex)
	default:
		return task, false, nil
	}
	switch {
	case numWorkers > 0:
		task.Count, task.CountFrom = numWorkers, "--num-workers"
	case envCount.from != "":
		task.Count, task.CountFrom = envCount.n, envCount.from
	default:
		return task, false, fmt.Errorf("%s=%d says this is a task of an array job, but not how many parts the run has (a SLURM array that is not 0..W-1, as a rerun of some tasks with sbatch --array=I, or a Kubernetes Indexed Job): pass --num-workers W, or --num-workers 0 to run unpartitioned",
			task.IndexFrom, task.Index)
	}
	if task.Count < 1 {
		return task, false, fmt.Errorf("the number of workers (%s) is %d, want at least 1", task.CountFrom, task.Count)
	}
	if task.Index < 0 || task.Index >= task.Count {
		hint := ""
		if task.IndexFrom == EnvSlurmTaskID {
			hint = fmt.Sprintf(": number the array's tasks from 0 (sbatch --array=0-%d)", task.Count-1)
		}
		return task, false, fmt.Errorf("worker index %d (%s) is not in [0, %d) (%s)%s", task.Index, task.IndexFrom, task.Count, task.CountFrom, hint)
	}
	return task, true, nil
}

// envNumber is a number read from the environment, and the variable it came from ("" if none).
type envNumber struct {
	n    int
	from string
}

// arrayEnv reads the first array-job environment there is: its task index and, where
// it says, its task count.
func arrayEnv(getenv func(string) string) (index, count envNumber, err error) {
	num := func(name string) (envNumber, error) {
		v := strings.TrimSpace(getenv(name))
		if v == "" {
			return envNumber{}, nil
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return envNumber{}, fmt.Errorf("%s=%q is not a task number", name, v)
		}
		return envNumber{n, name}, nil
	}
	must := func(names ...string) ([]envNumber, error) {
		out := make([]envNumber, len(names))
		for i, name := range names {
			if out[i], err = num(name); err != nil {
				return nil, err
			}
		}
		return out, nil
	}
	if getenv(EnvSlurmTaskID) != "" {
		v, err := must(EnvSlurmTaskID, EnvSlurmTaskCount, EnvSlurmTaskMin, EnvSlurmTaskMax)
		if err != nil {
			return index, count, err
		}
		count = v[1]
		if count.from == "" && v[2].from != "" && v[2].n == 0 && v[3].from != "" {
			count = envNumber{v[3].n + 1, EnvSlurmTaskMax + "+1"}
		}
		// The array's size is the run's parts only for a whole array 0..W-1 of more
		// than one task: a rerun of some tasks (sbatch --array=2, or --array=0, which
		// would take the whole corpus for "part 0 of 1") says nothing of W.
		min, max := v[2], v[3]
		if count.n < 2 || min.from != "" && min.n != 0 || max.from != "" && max.n != count.n-1 {
			count = envNumber{}
		}
		return v[0], count, nil
	}
	if getenv(EnvK8sIndex) != "" {
		v, err := must(EnvK8sIndex)
		if err != nil {
			return index, count, err
		}
		return v[0], envNumber{}, nil
	}
	if getenv(EnvAWSBatchIndex) != "" {
		v, err := must(EnvAWSBatchIndex, EnvAWSBatchSize)
		if err != nil {
			return index, count, err
		}
		return v[0], v[1], nil
	}
	return index, count, nil
}
