package dist

import (
	"errors"
	"fmt"
)

// Where a rank's local rank (its place among the ranks of its node, which picks
// its GPU) comes from. Each launcher names it differently: torchrun and
// gptkit's launcher LOCAL_RANK, srun SLURM_LOCALID, Open MPI's mpirun
// OMPI_COMM_WORLD_LOCAL_RANK.
const (
	EnvLocalRank     = "LOCAL_RANK"
	EnvSLURMLocalID  = "SLURM_LOCALID"
	EnvOMPILocalRank = "OMPI_COMM_WORLD_LOCAL_RANK"
)

// LocalRank returns this rank's local rank and the variable it came from: the
// first of LOCAL_RANK, SLURM_LOCALID and OMPI_COMM_WORLD_LOCAL_RANK that is set,
// else the place's own (what the launcher's flags said; 0 for a single process
// or a rank started by hand). It is decided once the rank's place is known:
// under mpirun (the place came from Open MPI) SLURM_LOCALID is skipped, since
// mpirun's ranks inside a SLURM allocation inherit the SLURM_LOCALID of the
// daemon that started them, the same on every rank of a node. A local rank
// outside the node's ranks (LOCAL_WORLD_SIZE and the like, where known) is an
// error.
func LocalRank(getenv func(string) string, p Place) (local int, from string, err error) {
	candidates := []string{EnvLocalRank, EnvSLURMLocalID, EnvOMPILocalRank}
	if p.Source == "openmpi" {
		candidates = []string{EnvLocalRank, EnvOMPILocalRank}
	}
	local, from = p.LocalRank, "the "+p.Source+" place"
	switch p.Source {
	case "":
		local, from = 0, "a single process"
	case "flags":
		local, from = 0, "--rank without LOCAL_RANK"
	}
	for _, name := range candidates {
		if getenv(name) == "" {
			continue
		}
		n, err := envInt(getenv, name, 0)
		if err != nil {
			return 0, name, err
		}
		local, from = n, name
		break
	}
	switch {
	case local < 0:
		return 0, from, fmt.Errorf("dist: local rank %d (from %s) is negative", local, from)
	case p.LocalWorld > 1 && local >= p.LocalWorld:
		return 0, from, fmt.Errorf("dist: local rank %d (from %s) is not below the %d ranks of this node", local, from, p.LocalWorld)
	}
	return local, from, nil
}

// fromOpenMPI reads the place of a rank started by Open MPI's mpirun
// (OMPI_COMM_WORLD_RANK, _SIZE, _LOCAL_RANK, _LOCAL_SIZE; the store at
// MASTER_ADDR, which a job over several nodes must set, and MASTER_PORT, else
// 29500), as DeepSpeed's MPI discovery does.
func fromOpenMPI(getenv func(string) string) (Place, error) {
	p := Place{Source: "openmpi"}
	var errs []error
	get := func(name string, def int) int {
		n, err := envInt(getenv, name, def)
		errs = append(errs, err)
		return n
	}
	p.Rank = get("OMPI_COMM_WORLD_RANK", -1)
	p.World = get("OMPI_COMM_WORLD_SIZE", -1)
	p.LocalRank = get(EnvOMPILocalRank, 0)
	p.LocalWorld = get("OMPI_COMM_WORLD_LOCAL_SIZE", 1)
	if err := errors.Join(errs...); err != nil {
		return p, err
	}
	if p.Rank < 0 || p.World < 1 {
		return p, fmt.Errorf("dist: Open MPI environment with OMPI_COMM_WORLD_RANK=%q and OMPI_COMM_WORLD_SIZE=%q: both are needed",
			getenv("OMPI_COMM_WORLD_RANK"), getenv("OMPI_COMM_WORLD_SIZE"))
	}
	if p.LocalWorld > 0 {
		p.NodeRank = p.Rank / p.LocalWorld
	}
	p.MasterAddr = getenv("MASTER_ADDR")
	p.MasterPort = get("MASTER_PORT", DefaultMasterPort)
	p.HostStore = p.Rank == 0
	for _, id := range []string{"OMPI_MCA_ess_base_jobid", "OMPI_MCA_orte_ess_jobid", "PMIX_NAMESPACE"} {
		if v := getenv(id); v != "" {
			p.JobID = v
			break
		}
	}
	if p.MasterAddr == "" && p.World > 1 {
		if p.LocalWorld != p.World {
			return p, errors.New("dist: an Open MPI job over several nodes needs MASTER_ADDR (the first node's address): export it with mpirun -x MASTER_ADDR")
		}
		p.MasterAddr = "127.0.0.1"
	}
	if err := errors.Join(errs...); err != nil {
		return p, err
	}
	return p, validateEnv(p, getenv, "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")
}
