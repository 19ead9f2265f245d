package dist

import (
	"strings"
	"testing"
)

// TestLocalRank: the local rank (which picks a rank's GPU) from every
// launcher's environment, in the order LOCAL_RANK, SLURM_LOCALID,
// OMPI_COMM_WORLD_LOCAL_RANK, else the place's.
func TestLocalRank(t *testing.T) {
	slurm := []string{"SLURM_PROCID", "6", "SLURM_STEP_ID", "0", "SLURM_NTASKS", "8", "SLURM_LOCALID", "2", "SLURM_NODEID", "1",
		"SLURM_JOB_ID", "77", "SLURM_STEP_NODELIST", "gpu[1-2]", "SLURM_STEP_TASKS_PER_NODE", "4(x2)"}
	ompi := []string{"OMPI_COMM_WORLD_RANK", "5", "OMPI_COMM_WORLD_SIZE", "8", "OMPI_COMM_WORLD_LOCAL_RANK", "1",
		"OMPI_COMM_WORLD_LOCAL_SIZE", "4", "MASTER_ADDR", "gpu1"}
	for _, tc := range []struct {
		name   string
		env    []string
		source string // the place's
		local  int
		from   string
		err    string
	}{
		{"single process", nil, "", 0, "a single process", ""},
		{"gptkit's launcher", []string{"RANK", "5", "WORLD_SIZE", "8", "LOCAL_RANK", "1", "LOCAL_WORLD_SIZE", "4", "MASTER_ADDR", "h", EnvLauncherStore, "1"},
			"launcher", 1, "LOCAL_RANK", ""},
		{"torchrun", []string{"RANK", "3", "WORLD_SIZE", "4", "LOCAL_RANK", "3", "LOCAL_WORLD_SIZE", "4", "MASTER_ADDR", "h"}, "torchrun", 3, "LOCAL_RANK", ""},
		{"srun, 4 tasks per node", slurm, "slurm", 2, "SLURM_LOCALID", ""},
		{"torchrun inside srun", append([]string{"RANK", "1", "WORLD_SIZE", "8", "LOCAL_RANK", "1", "LOCAL_WORLD_SIZE", "8", "MASTER_ADDR", "h"}, slurm...),
			"torchrun", 1, "LOCAL_RANK", ""},
		{"mpirun", ompi, "openmpi", 1, "OMPI_COMM_WORLD_LOCAL_RANK", ""},
		{"mpirun inside a SLURM allocation", append(append([]string{}, ompi...), "SLURM_PROCID", "0", "SLURM_STEP_ID", "1", "SLURM_LOCALID", "0", "SLURM_NTASKS", "2"),
			"openmpi", 1, "OMPI_COMM_WORLD_LOCAL_RANK", ""},
		{"torchrun-style by hand, no LOCAL_RANK, under srun", []string{"RANK", "6", "WORLD_SIZE", "8", "MASTER_ADDR", "h", "SLURM_LOCALID", "2"},
			"torchrun", 2, "SLURM_LOCALID", ""},
		{"past the node's ranks", []string{"RANK", "4", "WORLD_SIZE", "8", "LOCAL_RANK", "4", "LOCAL_WORLD_SIZE", "4", "MASTER_ADDR", "h"},
			"torchrun", 0, "", "local rank 4 (from LOCAL_RANK) is not below the 4 ranks of this node"},
		{"not a number", []string{"RANK", "1", "WORLD_SIZE", "2", "LOCAL_RANK", "one", "MASTER_ADDR", "h"}, "", 0, "", "LOCAL_RANK"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := envFunc(tc.env...)
			p, _, err := Detect(env)
			if err == nil {
				var local int
				var from string
				local, from, err = LocalRank(env, p)
				if err == nil && (p.Source != tc.source || local != tc.local || from != tc.from) {
					t.Errorf("source %q local %d from %q, want %q %d %q", p.Source, local, from, tc.source, tc.local, tc.from)
				}
			}
			if tc.err == "" && err != nil || tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)) {
				t.Errorf("err %v, want %q", err, tc.err)
			}
		})
	}
	// a rank started by hand (--rank) takes LOCAL_RANK when set, else 0
	p := Place{Rank: 3, World: 4, Source: "flags"}
	if l, from, err := LocalRank(envFunc(), p); l != 0 || err != nil {
		t.Errorf("by hand: %d %q %v", l, from, err)
	}
	if l, _, _ := LocalRank(envFunc("LOCAL_RANK", "1"), p); l != 1 {
		t.Errorf("by hand with LOCAL_RANK=1: %d", l)
	}
}

// Open MPI's mpirun: the place from OMPI_COMM_WORLD_*, which wins over the
// SLURM variables its ranks inherit inside an allocation.
func TestDetectOpenMPI(t *testing.T) {
	p, found, err := Detect(envFunc("OMPI_COMM_WORLD_RANK", "5", "OMPI_COMM_WORLD_SIZE", "8", "OMPI_COMM_WORLD_LOCAL_RANK", "1",
		"OMPI_COMM_WORLD_LOCAL_SIZE", "4", "MASTER_ADDR", "gpu1", "PMIX_NAMESPACE", "prterun-gpu1-123@1", "SLURM_PROCID", "0", "SLURM_STEP_ID", "0"))
	want := Place{Rank: 5, World: 8, LocalRank: 1, LocalWorld: 4, NodeRank: 1, MasterAddr: "gpu1", MasterPort: DefaultMasterPort,
		Source: "openmpi", JobID: "prterun-gpu1-123@1"}
	if err != nil || !found || p != want {
		t.Errorf("got %+v %v %v\nwant %+v", p, found, err, want)
	}
	if _, _, err := Detect(envFunc("OMPI_COMM_WORLD_RANK", "5", "OMPI_COMM_WORLD_SIZE", "8", "OMPI_COMM_WORLD_LOCAL_SIZE", "4")); err == nil ||
		!strings.Contains(err.Error(), "MASTER_ADDR") {
		t.Errorf("several nodes without MASTER_ADDR: %v", err)
	}
	p, _, err = Detect(envFunc("OMPI_COMM_WORLD_RANK", "0", "OMPI_COMM_WORLD_SIZE", "2", "OMPI_COMM_WORLD_LOCAL_SIZE", "2"))
	if err != nil || p.MasterAddr != "127.0.0.1" || !p.HostStore {
		t.Errorf("one node: %+v %v", p, err)
	}
}
