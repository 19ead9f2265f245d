package dist

import (
	"cmp"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// Place is where a rank stands in a job, and where the job's store is.
type Place struct {
	Rank, World           int
	LocalRank, LocalWorld int // on this node
	NodeRank              int
	MasterAddr            string // the store's host
	MasterPort            int    // the store's port
	// HostStore: this process starts the store (rank 0 when no launcher hosts it).
	HostStore bool
	// StoreHostedByLauncher: node 0's launcher hosts the store (for messages).
	StoreHostedByLauncher bool
	// RestartCount is how many times the launcher restarted the group.
	RestartCount int
	// Source says where the place came from: "flags", "launcher", "torchrun",
	// "openmpi", "slurm", or "" (a single process).
	Source string
	// JobID identifies the job for a derived token (SLURM_JOB_ID, TORCHELASTIC_RUN_ID).
	JobID string
}

// DefaultMasterPort is the store's port when nothing says otherwise (torchrun's).
const DefaultMasterPort = 29500

// Validate checks the place.
func (p Place) Validate() error {
	switch {
	case p.World < 1:
		return fmt.Errorf("dist: world size %d < 1", p.World)
	case p.Rank < 0 || p.Rank >= p.World:
		return fmt.Errorf("dist: rank %d is not in [0,%d)", p.Rank, p.World)
	case p.World > 1 && p.MasterAddr == "":
		return errors.New("dist: no master address (MASTER_ADDR, --master-addr or SLURM_NODELIST)")
	case p.World > 1 && (p.MasterPort < 1 || p.MasterPort > 65535):
		return fmt.Errorf("dist: master port %d is not in [1,65535]", p.MasterPort)
	}
	return nil
}

// Environment variables this package reads besides torchrun's and SLURM's.
const (
	// EnvToken is the job token every process of a job must carry.
	EnvToken = "GPTKIT_JOB_TOKEN"
	// EnvLauncherStore, set to 1 by gptkit's launcher, says node 0's launcher hosts
	// the store at MASTER_ADDR:MASTER_PORT (otherwise rank 0 does).
	EnvLauncherStore = "GPTKIT_LAUNCHER_STORE"
	// EnvNodeRank is the launcher's node rank (torchrun's GROUP_RANK).
	EnvNodeRank = "GROUP_RANK"
)

// Detect reads a rank's place from the environment: torchrun's variables (RANK,
// WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT, as gptkit's
// launcher sets them too), else Open MPI's (mpirun: OMPI_COMM_WORLD_*, with
// MASTER_ADDR), else SLURM's inside an srun step (SLURM_PROCID,
// SLURM_NTASKS, SLURM_LOCALID, SLURM_NODEID, SLURM_NODELIST's first host as the
// master unless MASTER_ADDR is set; MASTER_PORT, else 29500 + SLURM_JOB_ID mod
// 10000). found is false when neither is there (a single process).
func Detect(getenv func(string) string) (p Place, found bool, err error) {
	if getenv("RANK") != "" || getenv("WORLD_SIZE") != "" {
		p, err = fromTorchrun(getenv)
		return p, err == nil, err
	}
	if getenv("OMPI_COMM_WORLD_SIZE") != "" {
		// Before SLURM's: mpirun's ranks inside an allocation inherit its daemons' SLURM_*.
		p, err = fromOpenMPI(getenv)
		return p, err == nil, err
	}
	if getenv("SLURM_PROCID") != "" && getenv("SLURM_STEP_ID") != "" {
		p, err = fromSLURM(getenv)
		return p, err == nil, err
	}
	return Place{Rank: 0, World: 1, LocalWorld: 1}, false, nil
}

// validateEnv is p.Validate for a place read from the environment: its error names
// the variables it was read from ("dist: rank 2 is not in [0,2)" alone did not say
// where the 2s came from, nor what to change).
func validateEnv(p Place, getenv func(string) string, names ...string) error {
	err := p.Validate()
	if err == nil {
		return nil
	}
	var set []string
	for _, n := range names {
		if v := getenv(n); v != "" {
			set = append(set, n+"="+strconv.Quote(v))
		}
	}
	who := map[string]string{"torchrun": "torchrun's", "launcher": "the launcher's", "slurm": "SLURM's", "openmpi": "Open MPI's"}[p.Source]
	return fmt.Errorf("%w, read from %s environment (%s): fix or unset them", err, cmp.Or(who, "the"), strings.Join(set, " "))
}

func envInt(getenv func(string) string, name string, def int) (int, error) {
	s := getenv(name)
	if s == "" {
		return def, nil
	}
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil {
		return 0, fmt.Errorf("dist: %s=%q is not an integer", name, s)
	}
	return n, nil
}

func fromTorchrun(getenv func(string) string) (Place, error) {
	p := Place{Source: "torchrun"}
	var errs []error
	get := func(name string, def int) int {
		n, err := envInt(getenv, name, def)
		errs = append(errs, err)
		return n
	}
	p.Rank = get("RANK", -1)
	p.World = get("WORLD_SIZE", -1)
	if p.Rank < 0 || p.World < 1 {
		return p, fmt.Errorf("dist: torchrun environment with RANK=%q and WORLD_SIZE=%q: both are needed", getenv("RANK"), getenv("WORLD_SIZE"))
	}
	p.LocalRank = get("LOCAL_RANK", p.Rank)
	p.LocalWorld = get("LOCAL_WORLD_SIZE", p.World)
	p.NodeRank = get(EnvNodeRank, 0)
	p.MasterAddr = getenv("MASTER_ADDR")
	p.MasterPort = get("MASTER_PORT", DefaultMasterPort)
	p.RestartCount = get("TORCHELASTIC_RESTART_COUNT", 0)
	p.JobID = getenv("TORCHELASTIC_RUN_ID")
	if getenv(EnvLauncherStore) == "1" {
		p.Source = "launcher"
		p.StoreHostedByLauncher = true
	} else {
		p.HostStore = p.Rank == 0
		if getenv("TORCHELASTIC_USE_AGENT_STORE") == "True" {
			// PyTorch's torchrun serves its own store on MASTER_PORT: ours goes beside it.
			p.MasterPort++
		}
	}
	if p.MasterAddr == "" && p.World > 1 {
		p.MasterAddr = "127.0.0.1"
		if p.LocalWorld != p.World {
			return p, errors.New("dist: torchrun environment spanning nodes without MASTER_ADDR")
		}
	}
	if err := errors.Join(errs...); err != nil {
		return p, err
	}
	return p, validateEnv(p, getenv, "RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")
}

func fromSLURM(getenv func(string) string) (Place, error) {
	p := Place{Source: "slurm", JobID: getenv("SLURM_JOB_ID")}
	var errs []error
	get := func(name string, def int) int {
		n, err := envInt(getenv, name, def)
		errs = append(errs, err)
		return n
	}
	p.Rank = get("SLURM_PROCID", 0)
	world := getenv("SLURM_STEP_NUM_TASKS")
	if world == "" {
		world = getenv("SLURM_NTASKS")
	}
	if world == "" {
		world = "1"
	}
	n, err := strconv.Atoi(world)
	if err != nil {
		errs = append(errs, fmt.Errorf("dist: SLURM_NTASKS=%q is not an integer", world))
	}
	p.World = n
	p.LocalRank = get("SLURM_LOCALID", 0)
	p.NodeRank = get("SLURM_NODEID", 0)
	p.LocalWorld = 1
	if tpn := getenv("SLURM_STEP_TASKS_PER_NODE"); tpn != "" {
		counts, err := ParseTasksPerNode(tpn)
		if err != nil {
			errs = append(errs, err)
		} else if p.NodeRank < len(counts) {
			p.LocalWorld = counts[p.NodeRank]
		}
	}
	p.MasterAddr = getenv("MASTER_ADDR")
	if p.MasterAddr == "" {
		list := getenv("SLURM_STEP_NODELIST")
		if list == "" {
			list = getenv("SLURM_JOB_NODELIST")
		}
		if list == "" {
			list = getenv("SLURM_NODELIST")
		}
		hosts, err := ParseNodeList(list)
		if err != nil {
			errs = append(errs, err)
		} else if len(hosts) > 0 {
			p.MasterAddr = hosts[0]
		}
	}
	jobID, _ := strconv.Atoi(p.JobID)
	p.MasterPort = get("MASTER_PORT", DefaultMasterPort+jobID%10000)
	p.HostStore = p.Rank == 0
	p.RestartCount = get("SLURM_RESTART_COUNT", 0)
	if err := errors.Join(errs...); err != nil {
		return p, err
	}
	return p, validateEnv(p, getenv, "SLURM_PROCID", "SLURM_STEP_NUM_TASKS", "SLURM_NTASKS", "MASTER_ADDR", "MASTER_PORT", "SLURM_JOB_ID")
}

// ParseNodeList expands a SLURM hostlist expression ("node[01-03,7],gpu5" →
// node01 node02 node03 node7 gpu5), in order.
func ParseNodeList(s string) ([]string, error) {
	var hosts []string
	s = strings.TrimSpace(s)
	for len(s) > 0 {
		// One item: up to a comma outside brackets.
		depth, end := 0, len(s)
		for i, r := range s {
			if r == '[' {
				depth++
			} else if r == ']' {
				depth--
				if depth < 0 {
					return nil, fmt.Errorf("dist: node list %q: unbalanced ']'", s)
				}
			} else if r == ',' && depth == 0 {
				end = i
				break
			}
		}
		if depth != 0 {
			return nil, fmt.Errorf("dist: node list %q: unbalanced '['", s)
		}
		item := s[:end]
		if end < len(s) {
			s = s[end+1:]
			if s == "" {
				return nil, errors.New("dist: node list ends with a comma")
			}
		} else {
			s = ""
		}
		if item == "" {
			return nil, errors.New("dist: node list with an empty item")
		}
		expanded, err := expandHost(item)
		if err != nil {
			return nil, err
		}
		if len(hosts)+len(expanded) > maxNodes {
			return nil, fmt.Errorf("dist: node list names more than %d hosts", maxNodes)
		}
		hosts = append(hosts, expanded...)
	}
	return hosts, nil
}

// maxNodes bounds an expanded node list.
const maxNodes = 1 << 16

// expandHost expands one item: a prefix, then bracketed ranges and text, e.g.
// rack[1-2]-n[01-02].
func expandHost(item string) ([]string, error) {
	open := strings.IndexByte(item, '[')
	if open < 0 {
		if strings.ContainsAny(item, "]") {
			return nil, fmt.Errorf("dist: node list item %q: unbalanced ']'", item)
		}
		return []string{item}, nil
	}
	close := strings.IndexByte(item[open:], ']')
	if close < 0 {
		return nil, fmt.Errorf("dist: node list item %q: unbalanced '['", item)
	}
	close += open
	prefix, ranges, rest := item[:open], item[open+1:close], item[close+1:]
	tails, err := expandHost(rest)
	if err != nil {
		return nil, err
	}
	if rest == "" {
		tails = []string{""}
	}
	var out []string
	for _, r := range strings.Split(ranges, ",") {
		lo, hi, isRange := strings.Cut(r, "-")
		if !isRange {
			hi = lo
		}
		if lo == "" || hi == "" || !digits(lo) || !digits(hi) {
			return nil, fmt.Errorf("dist: node list item %q: bad range %q", item, r)
		}
		a, err1 := strconv.Atoi(lo)
		b, err2 := strconv.Atoi(hi)
		if err1 != nil || err2 != nil || b < a {
			return nil, fmt.Errorf("dist: node list item %q: bad range %q", item, r)
		}
		if b-a >= maxNodes || len(out)+(b-a+1)*len(tails) > maxNodes {
			return nil, fmt.Errorf("dist: node list item %q names more than %d hosts", item, maxNodes)
		}
		width := len(lo) // zero padding, as SLURM writes it
		for n := a; n <= b; n++ {
			num := strconv.Itoa(n)
			if len(num) < width {
				num = strings.Repeat("0", width-len(num)) + num
			}
			for _, t := range tails {
				out = append(out, prefix+num+t)
			}
		}
	}
	return out, nil
}

func digits(s string) bool {
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return len(s) > 0 && len(s) <= 9
}

// ParseTasksPerNode expands SLURM_TASKS_PER_NODE ("2(x3),1" → 2 2 2 1).
func ParseTasksPerNode(s string) ([]int, error) {
	var out []int
	for _, item := range strings.Split(strings.TrimSpace(s), ",") {
		count, rep := item, "1"
		if i := strings.IndexByte(item, '('); i >= 0 {
			if !strings.HasPrefix(item[i:], "(x") || !strings.HasSuffix(item, ")") {
				return nil, fmt.Errorf("dist: tasks per node %q: bad item %q", s, item)
			}
			count, rep = item[:i], item[i+2:len(item)-1]
		}
		c, err1 := strconv.Atoi(count)
		r, err2 := strconv.Atoi(rep)
		if err1 != nil || err2 != nil || c < 0 || r < 1 || len(out)+r > maxNodes {
			return nil, fmt.Errorf("dist: tasks per node %q: bad item %q", s, item)
		}
		for range r {
			out = append(out, c)
		}
	}
	return out, nil
}

// NewToken returns a fresh random job token (what the launcher hands its ranks).
func NewToken() string {
	b := make([]byte, 16)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// Token returns the job token: GPTKIT_JOB_TOKEN, else one derived from what every
// process of the job shares (the job id, the store's address, the user). A derived
// token keeps other jobs out, not an attacker who can read the job's environment:
// derived says so, for a warning.
func Token(getenv func(string) string, p Place) (token string, derived bool) {
	if t := getenv(EnvToken); t != "" {
		return t, false
	}
	h := sha256.Sum256([]byte(fmt.Sprintf("gptkit-job|%s|%s|%s:%d|%d", p.Source, p.JobID, p.MasterAddr, p.MasterPort, os.Getuid())))
	return "derived-" + hex.EncodeToString(h[:16]), true
}

func tokenEqual(a, b string) bool { return subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1 }

// ExitInterrupted is the exit status of a rank that stopped on a stop signal, its
// own or another rank's (128 + SIGINT, as shells report it): a launcher takes it for
// an interrupt of the job, not a failure to restart from.
const ExitInterrupted = 130
