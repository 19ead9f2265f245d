package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gptkit/internal/slurmtest"
	"gptkit/kernels/cuda"
	"gptkit/train/dist"
)

// placeGPU runs a rank's whole GPU choice on a simulated node of 4 GPUs (host
// "node1") from an environment: its place, its local rank, the GPUs it sees
// after CUDA_VISIBLE_DEVICES, the ordinal, and which of the node's GPUs (its
// index) that is.
func placeGPU(t *testing.T, env map[string]string) (gpuChoice, int, error) {
	t.Helper()
	getenv := func(k string) string { return env[k] }
	place, _, err := dist.Detect(getenv)
	if err != nil {
		return gpuChoice{}, -1, err
	}
	so := cuda.SimOptions{GPUs: 4, Host: "node1"}
	if v, ok := env["CUDA_VISIBLE_DEVICES"]; ok {
		so.VisibleDevices = &v
	}
	choice, err := chooseGPU(getenv, place, cuda.Options{Sim: &so})
	if err != nil {
		return choice, -1, err
	}
	seen, err := cuda.Devices(cuda.Options{Sim: &so})
	if err != nil {
		return choice, -1, err
	}
	all, _ := cuda.Devices(cuda.Options{Sim: &cuda.SimOptions{GPUs: 4, Host: "node1"}})
	for i, g := range all {
		if g.UUID == seen[choice.ordinal].UUID {
			return choice, i, nil
		}
	}
	t.Fatalf("GPU %s is not the node's", seen[choice.ordinal].UUID)
	return choice, -1, nil
}

func envMap(kv ...string) map[string]string {
	m := map[string]string{}
	for i := 0; i < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return m
}

// TestGPUPlacement: which GPU of a 4-GPU node each launcher's ranks take.
func TestGPUPlacement(t *testing.T) {
	srunTask := func(procid, localid int, extra ...string) map[string]string {
		return envMap(append([]string{"SLURM_PROCID", fmt.Sprint(procid), "SLURM_STEP_ID", "0", "SLURM_NTASKS", "8", "SLURM_LOCALID", fmt.Sprint(localid),
			"SLURM_NODEID", fmt.Sprint(procid / 4), "SLURM_JOB_ID", "41", "SLURM_STEP_NODELIST", "node[1-2]", "SLURM_STEP_TASKS_PER_NODE", "4(x2)"}, extra...)...)
	}
	for _, tc := range []struct {
		name  string
		env   map[string]string
		local int
		from  string
		gpu   int // the node's GPU
		err   string
	}{
		{"one process", envMap(), 0, "a single process", 0, ""},
		{"gptkit's launcher, rank 6 of 2x4", envMap("RANK", "6", "WORLD_SIZE", "8", "LOCAL_RANK", "2", "LOCAL_WORLD_SIZE", "4",
			"MASTER_ADDR", "node1", dist.EnvLauncherStore, "1"), 2, "LOCAL_RANK", 2, ""},
		{"torchrun, rank 3", envMap("RANK", "3", "WORLD_SIZE", "4", "LOCAL_RANK", "3", "LOCAL_WORLD_SIZE", "4", "MASTER_ADDR", "h"), 3, "LOCAL_RANK", 3, ""},
		{"srun, 4 tasks per node, task 5", srunTask(5, 1), 1, "SLURM_LOCALID", 1, ""},
		{"srun, 4 tasks per node, task 7", srunTask(7, 3), 3, "SLURM_LOCALID", 3, ""},
		{"srun --gpus-per-task=1 (each task sees its own GPU)", srunTask(6, 2, "CUDA_VISIBLE_DEVICES", "2"), 2, "SLURM_LOCALID", 2, ""},
		{"srun --gpus-per-task=2, task 1", srunTask(1, 1, "CUDA_VISIBLE_DEVICES", "2,3"), 1, "SLURM_LOCALID", 3, ""},
		{"torchrun inside srun", envMap("RANK", "1", "WORLD_SIZE", "4", "LOCAL_RANK", "1", "LOCAL_WORLD_SIZE", "4", "MASTER_ADDR", "h",
			"SLURM_PROCID", "0", "SLURM_STEP_ID", "0", "SLURM_LOCALID", "0"), 1, "LOCAL_RANK", 1, ""},
		{"mpirun", envMap("OMPI_COMM_WORLD_RANK", "6", "OMPI_COMM_WORLD_SIZE", "8", "OMPI_COMM_WORLD_LOCAL_RANK", "2",
			"OMPI_COMM_WORLD_LOCAL_SIZE", "4", "MASTER_ADDR", "node1"), 2, "OMPI_COMM_WORLD_LOCAL_RANK", 2, ""},
		{"mpirun inside SLURM (its daemon's SLURM_LOCALID is not the rank's)", envMap("OMPI_COMM_WORLD_RANK", "6", "OMPI_COMM_WORLD_SIZE", "8",
			"OMPI_COMM_WORLD_LOCAL_RANK", "2", "OMPI_COMM_WORLD_LOCAL_SIZE", "4", "MASTER_ADDR", "node1",
			"SLURM_PROCID", "1", "SLURM_STEP_ID", "0", "SLURM_LOCALID", "0"), 2, "OMPI_COMM_WORLD_LOCAL_RANK", 2, ""},
		{"CUDA_VISIBLE_DEVICES reorders", envMap("RANK", "1", "WORLD_SIZE", "4", "LOCAL_RANK", "1", "LOCAL_WORLD_SIZE", "4", "MASTER_ADDR", "h",
			"CUDA_VISIBLE_DEVICES", "3,2,1,0"), 1, "LOCAL_RANK", 2, ""},
		{"8 ranks on 4 GPUs: rank 5 lands on GPU 1 (the ranks' UUID check refuses it)", envMap("RANK", "5", "WORLD_SIZE", "8", "LOCAL_RANK", "5",
			"LOCAL_WORLD_SIZE", "8", "MASTER_ADDR", "h"), 5, "LOCAL_RANK", 1, ""},
		{"no GPU visible", envMap("CUDA_VISIBLE_DEVICES", ""), 0, "", 0, "no CUDA device"},
		{"LOCAL_RANK past the node's ranks", envMap("RANK", "4", "WORLD_SIZE", "8", "LOCAL_RANK", "4", "LOCAL_WORLD_SIZE", "4", "MASTER_ADDR", "h"),
			0, "", 0, "not below the 4 ranks of this node"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			choice, gpu, err := placeGPU(t, tc.env)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if choice.local != tc.local || choice.from != tc.from || gpu != tc.gpu {
				t.Errorf("local rank %d from %q on GPU %d, want %d from %q on GPU %d", choice.local, choice.from, gpu, tc.local, tc.from, tc.gpu)
			}
		})
	}
}

// TestGPUPlacementSrun: on a real SLURM, `srun -n 4 --ntasks-per-node 4`
// gives its tasks the environment from which each takes its own GPU of the
// node (before this, every srun task opened GPU 0: only LOCAL_RANK was read).
func TestGPUPlacementSrun(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a SLURM cluster")
	}
	c := slurmtest.Start(t)
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := c.Command(ctx, "srun", "-n", "4", "--ntasks-per-node", "4", "bash", "-c", "env > "+dir+"/env.$SLURM_PROCID")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("srun: %v\n%s\n%s", err, out, c.Logs())
	}
	gpus := map[int]int{}
	for task := range 4 {
		f, err := os.Open(filepath.Join(dir, fmt.Sprint("env.", task)))
		if err != nil {
			t.Fatal(err)
		}
		env := map[string]string{}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if k, v, ok := strings.Cut(sc.Text(), "="); ok && (strings.HasPrefix(k, "SLURM_") || k == "CUDA_VISIBLE_DEVICES") {
				env[k] = v
			}
		}
		f.Close()
		choice, gpu, err := placeGPU(t, env)
		if err != nil {
			t.Fatalf("task %d: %v", task, err)
		}
		if choice.from != "SLURM_LOCALID" {
			t.Errorf("task %d: local rank from %q", task, choice.from)
		}
		if prev, ok := gpus[gpu]; ok {
			t.Errorf("tasks %d and %d both on GPU %d", prev, task, gpu)
		}
		gpus[gpu] = task
		t.Logf("task %d: SLURM_LOCALID=%s → GPU %d", task, env["SLURM_LOCALID"], gpu)
	}

	// The trainer itself: 4 srun tasks on a simulated node of 4 GPUs, one GPU
	// each (two on one would be refused), their collectives through NCCL.
	data, _ := makeCharDataset(t)
	out := filepath.Join(dir, "run")
	cmd = c.Command(ctx, "srun", append([]string{"-n", "4", "--ntasks-per-node", "4", "--kill-on-bad-exit=1", os.Args[0]}, simDPArgs(data, out, 2, 3, 0)...)...)
	cmd.Env = append(cmd.Env, mainEnv+"=1", "MASTER_PORT="+freePort(t), envSimGPUs+"=4", "NCCL_IB_DISABLE=1")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("srun train: %v\n%s", err, stderr.String())
	}
	uuids := map[string]bool{}
	for _, line := range strings.Split(stderr.String(), "\n") {
		if _, rest, ok := strings.Cut(line, " uuid="); ok && strings.Contains(line, "msg=gpu ") {
			uuids[strings.Fields(rest)[0]] = true
		}
	}
	if len(uuids) != 4 || !strings.Contains(stderr.String(), "local_rank_from=SLURM_LOCALID") || strings.Count(stderr.String(), `nccl_env="NCCL_IB_DISABLE=1"`) != 4 || !strings.Contains(stderr.String(), `via=nccl`) && !strings.Contains(stderr.String(), "simulated nccl") {
		t.Errorf("the 4 ranks used GPUs %v:\n%s", uuids, stderr.String())
	}
}
