package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"gptkit/internal/cli"
	"gptkit/kernels"
	"gptkit/kernels/cuda"
	"gptkit/train"
	"gptkit/train/dist"
	"gptkit/train/launch"
)

// distFlags are the command line's data-parallel flags: the launcher's
// (torchrun's names), a rank's own place, and the timeouts.
type distFlags struct {
	nprocPerNode int
	nnodes       int
	nodeRank     int
	masterAddr   string
	masterPort   int
	maxRestarts  int
	hostfile     string
	ssh          string
	remote       bool
	rank         int
	worldSize    int
	timeout      time.Duration
	heartbeat    time.Duration
	collTimeout  time.Duration
	shareGPUs    bool
}

// launcherOnly are the flags a launcher consumes; the ranks it starts get the
// others (their place comes in torchrun's environment).
var launcherOnly = []string{"nproc-per-node", "nnodes", "node-rank", "master-addr", "master-port", "max-restarts", "hostfile", "ssh", "remote"}

// hostfileOnly are the flags the hostfile launcher consumes; the remote launchers
// get the others (and their node's flags).
var hostfileOnly = []string{"nproc-per-node", "nnodes", "node-rank", "master-addr", "hostfile", "ssh", "remote", "master-port"}

func (d *distFlags) register(fs *flag.FlagSet) {
	fs.IntVar(&d.nprocPerNode, "nproc-per-node", 0, "launch `N` ranks on this node (as torchrun): each a process of this command with the other flags (0: train in this process)")
	fs.IntVar(&d.nnodes, "nnodes", 1, "`NODES` in the job (start a launcher on each, with its --node-rank)")
	fs.IntVar(&d.nodeRank, "node-rank", 0, "this node's `RANK` in [0, nnodes); node 0 hosts the rendezvous store")
	fs.StringVar(&d.masterAddr, "master-addr", "", "node 0's `ADDRESS` (default: MASTER_ADDR, SLURM_NODELIST's first host, or 127.0.0.1)")
	fs.IntVar(&d.masterPort, "master-port", dist.DefaultMasterPort, "the rendezvous store's `PORT` on node 0; MASTER_PORT, when set, replaces the default")
	fs.IntVar(&d.maxRestarts, "max-restarts", 0, "restart the ranks up to `K` times after a failure; they resume from the newest checkpoint")
	fs.StringVar(&d.hostfile, "hostfile", "", "start a launcher on every host of `FILE` (DeepSpeed/GPT-NeoX format: HOST slots=N per line) over ssh; the first host is the master")
	fs.StringVar(&d.ssh, "ssh", "ssh", "the ssh `COMMAND` for --hostfile (words split at spaces, e.g. \"ssh -p 2222\")")
	fs.BoolVar(&d.remote, "remote", false, "(set by --hostfile) read the job token from stdin's first line; stop when stdin closes")
	fs.IntVar(&d.rank, "rank", -1, "this process's `RANK` when starting ranks by hand (with --world-size, --master-addr, --master-port and GPTKIT_JOB_TOKEN; -1: RANK or SLURM_PROCID)")
	fs.IntVar(&d.worldSize, "world-size", 0, "`RANKS` in the job when starting ranks by hand (0: WORLD_SIZE or SLURM_NTASKS)")
	fs.DurationVar(&d.timeout, "dist-timeout", dist.DefaultTimeout, "bound on the data-parallel waits of starting: the rendezvous, the links, the NCCL id (`DURATION`)")
	fs.DurationVar(&d.heartbeat, "heartbeat-timeout", dist.DefaultHeartbeatTimeout, "a rank (or the store) silent this long is declared hung (`DURATION`)")
	fs.DurationVar(&d.collTimeout, "collective-timeout", dist.DefaultCollectiveTimeout, "a collective (NCCL's or the CPU ring's) not finished within `DURATION` on a rank fails the job, naming the ranks that never reached it")
	share, _ := envBool(os.Getenv(envShareGPUs)) // (validate refuses a value that is neither)
	fs.BoolVar(&d.shareGPUs, "share-gpus", share, "allow several ranks on one GPU (also "+envShareGPUs+"=1, true, yes or on): their collectives then go through the host, as NCCL refuses them; without it two ranks on one GPU is an error")
}

// gpuOptions are the flags' settings for the ranks' GPU collectives.
func (d *distFlags) gpuOptions() gpuOptions {
	return gpuOptions{share: d.shareGPUs, timeout: d.collTimeout, wait: d.timeout}
}

// dropFlags removes the named flags (and their values) from a command line.
func dropFlags(fs *flag.FlagSet, args []string, names []string) []string {
	drop := map[string]bool{}
	for _, n := range names {
		drop[n] = true
	}
	var out []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			return append(out, args[i:]...)
		}
		name, _, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !strings.HasPrefix(a, "-") || !drop[name] {
			out = append(out, a)
			continue
		}
		if f := fs.Lookup(name); f != nil && !hasValue && !isBoolFlag(f) {
			i++ // its value
		}
	}
	return out
}

func isBoolFlag(f *flag.Flag) bool {
	b, ok := f.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}

// validate checks the flags' combinations (a usage error otherwise).
func (d *distFlags) validate(set map[string]bool) error {
	switch {
	case d.nprocPerNode < 0:
		return fmt.Errorf("--nproc-per-node %d: want >= 0", d.nprocPerNode)
	case d.hostfile != "" && d.nprocPerNode > 0:
		return errors.New("--hostfile and --nproc-per-node: the hostfile's slots say how many ranks each node runs")
	case d.hostfile != "" && (set["nnodes"] || set["node-rank"]):
		return errors.New("--hostfile with --nnodes or --node-rank: the hostfile's lines are the nodes, numbered in their order (leave both out)")
	case d.hostfile == "" && d.nprocPerNode == 0 && (set["nnodes"] || set["node-rank"] || set["max-restarts"]):
		return errors.New("--nnodes, --node-rank and --max-restarts are launcher flags: give --nproc-per-node too")
	case d.nnodes < 1:
		return fmt.Errorf("--nnodes %d: want >= 1", d.nnodes)
	case d.nodeRank < 0 || d.nodeRank >= d.nnodes:
		return fmt.Errorf("--node-rank %d is not in [0,%d): the nodes of --nnodes %d are numbered from 0", d.nodeRank, d.nnodes, d.nnodes)
	case d.maxRestarts < 0:
		return fmt.Errorf("--max-restarts %d: want >= 0", d.maxRestarts)
	case set["master-port"] && (d.masterPort < 1 || d.masterPort > 65535):
		return fmt.Errorf("--master-port %d: want a port in [1,65535]", d.masterPort)
	case (d.rank >= 0) != (d.worldSize > 0):
		return errors.New("--rank and --world-size go together")
	case d.rank >= 0 && d.nprocPerNode > 0:
		return errors.New("--rank is a rank's own place; a launcher (--nproc-per-node) gives its ranks theirs")
	case d.timeout <= 0 || d.heartbeat <= 0 || d.collTimeout <= 0:
		return errors.New("--dist-timeout, --heartbeat-timeout and --collective-timeout must be positive")
	case d.heartbeat < minHeartbeatTimeout:
		return fmt.Errorf("--heartbeat-timeout %s: want at least %s (every rank and the store send a heartbeat every %s: a shorter timeout would declare healthy ranks hung)", d.heartbeat, minHeartbeatTimeout, dist.DefaultHeartbeatInterval)
	}
	// --share-gpus, else GPTKIT_SHARE_GPUS (yes or true there was taken for no).
	if !set["share-gpus"] {
		share, err := envBool(os.Getenv(envShareGPUs))
		if err != nil {
			return fmt.Errorf("%s=%q: %v (or pass --share-gpus)", envShareGPUs, os.Getenv(envShareGPUs), err)
		}
		d.shareGPUs = share
	}
	// Where the store listens: --master-port, else MASTER_PORT (as torchrun), else 29500.
	if !set["master-port"] && (d.nprocPerNode > 0 || d.hostfile != "" || d.rank >= 0) {
		if v := os.Getenv("MASTER_PORT"); v != "" {
			p, err := strconv.Atoi(v)
			if err != nil || p < 1 || p > 65535 {
				return fmt.Errorf("MASTER_PORT=%q: want a port in [1,65535] (or pass --master-port)", v)
			}
			d.masterPort = p
		}
	}
	return nil
}

// envBool is a yes-or-no environment variable's value: 1, true, yes or on (in any
// case) is true; 0, false, no, off or empty is false; anything else an error.
func envBool(v string) (bool, error) {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "1", "true", "yes", "on":
		return true, nil
	case "", "0", "false", "no", "off":
		return false, nil
	}
	return false, errors.New("want 1, true, yes or on to allow it, or 0, false, no, off or empty")
}

// minHeartbeatTimeout is three heartbeat intervals.
const minHeartbeatTimeout = 3 * dist.DefaultHeartbeatInterval

// launcherMasterAddr is where node 0's store listens, for a launcher: --master-addr,
// else MASTER_ADDR, else (several nodes in a SLURM allocation) its first node, else ""
// (launch.Run's 127.0.0.1 for one node).
func launcherMasterAddr(d *distFlags) string {
	if d.masterAddr != "" {
		return d.masterAddr
	}
	if addr := os.Getenv("MASTER_ADDR"); addr != "" {
		return addr
	}
	if d.nnodes > 1 {
		for _, key := range []string{"SLURM_JOB_NODELIST", "SLURM_NODELIST"} {
			if hosts, err := dist.ParseNodeList(os.Getenv(key)); err == nil && len(hosts) > 0 {
				return hosts[0]
			}
		}
	}
	return ""
}

// runLauncher implements --nproc-per-node: this process starts the node's ranks.
func runLauncher(ctx context.Context, d *distFlags, cfg *train.Config, fs *flag.FlagSet, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	log := slog.New(slog.NewTextHandler(stderr, nil))
	if msg := oversubscribed(cfg.Device, cfg.Threads, d.nprocPerNode, runtime.NumCPU()); msg != "" {
		// (torchrun warns too, and sets OMP_NUM_THREADS=1.)
		log.Warn(msg)
	}
	self, err := os.Executable()
	if err != nil {
		return trainFail(ctx, stderr, err)
	}
	token := os.Getenv(dist.EnvToken)
	var stop chan struct{}
	if d.remote {
		// Started by --hostfile over ssh: the token is stdin's first line, and the end of
		// stdin (the ssh connection gone) stops this launcher.
		br := bufio.NewReader(stdin)
		line, err := br.ReadString('\n')
		if err != nil {
			return trainFail(ctx, stderr, fmt.Errorf("--remote: read the job token from stdin: %w", err))
		}
		token = strings.TrimSpace(line)
		stop = make(chan struct{})
		go func() {
			io.Copy(io.Discard, br)
			close(stop)
		}()
	}
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, cli.StopSignals()...)
	defer signal.Stop(sigs)
	surviveBrokenPipe()
	addr, port := launcherMasterAddr(d), d.masterPort
	err = launch.Run(context.WithoutCancel(ctx), launch.Config{
		NProcPerNode: d.nprocPerNode, NNodes: d.nnodes, NodeRank: d.nodeRank, MasterAddr: addr, MasterPort: port,
		MaxRestarts: d.maxRestarts, Token: token, Program: self, Args: dropFlags(fs, args, launcherOnly),
		Stdout: stdout, Stderr: stderr, Signals: sigs, Stop: stop,
		Timeout: d.timeout, HeartbeatTimeout: d.heartbeat, Logger: log,
	})
	if errors.Is(err, launch.ErrInterrupted) {
		fmt.Fprintln(stderr, launcherInterruptedLine(ctx, cfg, d.nodeRank))
		return cli.ExitFailure
	}
	if err != nil {
		return cli.Fail(stderr, "train", err)
	}
	return cli.ExitOK
}

// oversubscribed is the warning for --threads threads for each of nproc ranks beyond
// the node's cpus, where the ranks train on the CPU ("" none): --device cpu, or auto
// where the ranks find no GPU (openRankBackend's fallback). Ranks on GPUs (cuda,
// cuda-sim, auto with a GPU) run few threads of their own, and ref one: no warning
// (auto with a GPU was warned about as if on the CPU).
func oversubscribed(device string, threads, nproc, cpus int) string {
	n := nproc * threads
	if threads <= 0 || n <= cpus {
		return ""
	}
	switch device {
	case "cpu":
	case "auto":
		if _, err := gpuCount(); err == nil {
			return "" // the ranks take the GPUs
		}
	default:
		return ""
	}
	return fmt.Sprintf("--threads %d for each of %d ranks: %d threads on %d CPUs, which slow each other down; leave --threads unset to divide the CPUs among the ranks", threads, nproc, n, cpus)
}

// gpuCount is the number of GPUs the ranks of --device auto see (they see what this
// process does: the same environment, CUDA_VISIBLE_DEVICES included), or why none
// (a variable for the tests).
var gpuCount = func() (int, error) { return cuda.DeviceCount(cuda.Options{}) }

// surviveBrokenPipe keeps a launcher or a training process alive when its stdout or
// stderr is a pipe whose reader is gone: "train ... 2>&1 | tee log" and Ctrl-C, which
// the terminal sends to tee as well. A Go program's write to such a stdout or stderr
// kills it with SIGPIPE unless it is notified of SIGPIPE; then the write only fails,
// and the run stops in order with its checkpoint (a launcher killed took its ranks
// with it by their parent-death signal, and the checkpoint with them). A channel,
// not signal.Ignore: an ignored signal stays ignored in the ranks.
func surviveBrokenPipe() {
	brokenPipeOnce.Do(func() { signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE) })
}

var brokenPipeOnce sync.Once

// runHostfile implements --hostfile: a launcher on every host, over ssh.
func runHostfile(ctx context.Context, d *distFlags, fs *flag.FlagSet, args []string, stdout, stderr io.Writer) int {
	data, err := os.ReadFile(d.hostfile)
	if err != nil {
		return trainFail(ctx, stderr, fmt.Errorf("--hostfile: %w", err))
	}
	hosts, err := launch.ParseHostfile(data, d.hostfile)
	if err != nil {
		return trainFail(ctx, stderr, err)
	}
	self, err := os.Executable()
	if err != nil {
		return trainFail(ctx, stderr, err)
	}
	sshCmd := strings.Fields(d.ssh)
	if len(sshCmd) == 0 {
		sshCmd = []string{"ssh"}
	}
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, cli.StopSignals()...)
	defer signal.Stop(sigs)
	surviveBrokenPipe()
	err = launch.RunHostfile(context.WithoutCancel(ctx), launch.HostfileConfig{
		Hosts: hosts, MasterPort: d.masterPort, Token: os.Getenv(dist.EnvToken), SSH: sshCmd, Program: self,
		Args: dropFlags(fs, args, hostfileOnly), Stdout: stdout, Stderr: stderr, Signals: sigs,
		Logger: slog.New(slog.NewTextHandler(stderr, nil)),
	})
	if errors.Is(err, launch.ErrInterrupted) {
		fmt.Fprintln(stderr, interruptedLine)
		return cli.ExitFailure
	}
	if err != nil {
		return cli.Fail(stderr, "train", err)
	}
	return cli.ExitOK
}

// rankPlace finds this process's place: the flags, else torchrun's, Open
// MPI's or SLURM's environment.
func rankPlace(d *distFlags, set map[string]bool) (dist.Place, error) {
	place, _, err := dist.Detect(os.Getenv)
	if err != nil {
		return place, err
	}
	if d.rank >= 0 {
		place = dist.Place{Rank: d.rank, World: d.worldSize, LocalWorld: 1, MasterAddr: os.Getenv("MASTER_ADDR"),
			MasterPort: d.masterPort, HostStore: d.rank == 0, Source: "flags"}
	}
	if set["master-addr"] {
		place.MasterAddr = d.masterAddr
	}
	if set["master-port"] {
		place.MasterPort = d.masterPort
	}
	if place.World > 1 && place.MasterAddr == "" {
		place.MasterAddr = "127.0.0.1"
	}
	return place, nil
}

// joinJob joins the job of several ranks at place and returns the
// communicator (nil for a single process).
func joinJob(ctx context.Context, place dist.Place, d *distFlags, log *slog.Logger) (*dist.Comm, error) {
	if place.World == 1 {
		return nil, nil
	}
	token, derived := dist.Token(os.Getenv, place)
	if derived {
		log.Warn("no "+dist.EnvToken+": using a token derived from the job's id and master address; it keeps other jobs out, not someone who can read this job's environment", "source", place.Source)
	}
	comm, err := dist.Init(ctx, place, dist.Options{Token: token, Timeout: d.timeout, CollectiveTimeout: d.collTimeout,
		HeartbeatTimeout: d.heartbeat, Logger: log})
	if err != nil {
		return nil, err
	}
	// However the rank is busy when the group fails (a long step), the process ends
	// within a bounded time, saying why.
	go func() {
		<-comm.Aborted()
		time.Sleep(abortGrace)
		fmt.Fprintf(os.Stderr, "train: %s\n", cli.OneLine(comm.Err().Error()))
		os.Exit(cli.ExitFailure)
	}()
	return comm, nil
}

// abortGrace is how long a rank whose group failed may take to return the error
// itself before it exits anyway.
const abortGrace = 20 * time.Second

// faultEnv makes a rank fail on purpose, for the tests of failure handling:
// "ACTION:RANK:N" with ACTION kill (SIGKILL), panic (a Go panic: the rank's own
// crash, with no word to the store), stop (SIGSTOP: a hang), term
// (SIGTERM: an orderly stop, as from a scheduler), fail (an error), hang (the
// rank stops before the collective but lives on: heartbeats go on, as in a
// deadlock or a stuck data loader), gpuhang (cuda-sim: the simulated GPU
// hangs before the collective, as behind a kernel that never ends) or
// ncclerror (cuda-sim: the simulated NCCL fails the collective in the
// background, as when a peer's connection breaks) at the rank's N-th
// collective, in the first attempt only (a restarted group runs clean);
// commhang and commerror are gpuhang and ncclerror at the rank's N-th
// collective started on the communication stream (a gradient bucket's); or
// nowait (N unused: the rank's NCCL queues its collectives on the
// communication stream without waiting for the compute stream, a planted
// ordering bug that cuda-sim's hazard check must catch).
const faultEnv = "GPTKIT_TEST_FAULT"

// withFault wraps coll as faultEnv says (coll itself without it); be is the
// rank's backend (the simulated GPU's faults go there).
func withFault(coll train.Collectives, place dist.Place, be kernels.Backend) train.Collectives {
	spec := os.Getenv(faultEnv)
	if spec == "" || place.RestartCount > 0 {
		return coll
	}
	var action string
	var rank, n int
	if _, err := fmt.Sscanf(strings.ReplaceAll(spec, ":", " "), "%s %d %d", &action, &rank, &n); err != nil || rank != coll.Rank() {
		return coll
	}
	if nc, ok := coll.(*cuda.NCCL); ok && action == "nowait" {
		nc.PlantMissingWait()
		return coll
	}
	f := &faulty{FullCollectives: train.Full(coll), action: action, at: n, be: be}
	if a, ok := strings.CutPrefix(action, "comm"); ok {
		f.action, f.commOnly = map[string]string{"hang": "gpuhang", "error": "ncclerror"}[a], true
	}
	if sc, ok := coll.(train.StreamCollectives); ok {
		return &faultyStreams{faulty: f, sc: sc}
	}
	return f
}

type faulty struct {
	train.FullCollectives
	action   string
	at, n    int
	be       kernels.Backend
	commOnly bool // count the collectives of the communication stream only
}

func (f *faulty) hit() error {
	if f.commOnly {
		return nil
	}
	return f.count()
}

// hitComm is hit for a collective started on the communication stream.
func (f *faulty) hitComm() error {
	return f.count()
}

func (f *faulty) count() error {
	if f.n++; f.n != f.at {
		return nil
	}
	switch f.action {
	case "kill":
		syscall.Kill(os.Getpid(), syscall.SIGKILL)
	case "panic":
		panic(fmt.Sprintf("%s: injected panic at collective %d", faultEnv, f.n))
	case "term":
		syscall.Kill(os.Getpid(), syscall.SIGTERM)
		return nil // the step goes on; the ranks stop together after it
	case "stop":
		// A hang: stopped, no heartbeats. (Stopped again should anything continue
		// it: where a shell's job control continues stopped processes.)
		for {
			syscall.Kill(os.Getpid(), syscall.SIGSTOP)
			time.Sleep(time.Millisecond)
		}
	case "hang":
		select {} // alive, heartbeating, never arriving
	case "gpuhang", "ncclerror":
		cb, ok := f.be.(*cuda.Backend)
		if !ok {
			return fmt.Errorf("%s: %s needs --device cuda-sim", faultEnv, f.action)
		}
		fault := cuda.SimHang
		if f.action == "ncclerror" {
			fault = cuda.SimNCCLError
		}
		return cb.InjectSimFault(fault) // then the collective, which never completes
	}
	return fmt.Errorf("%s: injected failure at collective %d", faultEnv, f.n)
}

func (f *faulty) AllReduceSum(ctx context.Context, buf []float32) error {
	if err := f.hit(); err != nil {
		return err
	}
	return f.FullCollectives.AllReduceSum(ctx, buf)
}

func (f *faulty) AllGather(ctx context.Context, buf []float32) error {
	if err := f.hit(); err != nil {
		return err
	}
	return f.FullCollectives.AllGather(ctx, buf)
}

func (f *faulty) ReduceScatterSum(ctx context.Context, buf []float32) error {
	if err := f.hit(); err != nil {
		return err
	}
	return f.FullCollectives.ReduceScatterSum(ctx, buf)
}

// faultyStreams is faulty over collectives on device tensors and a
// communication stream (NCCL): each of those counts as a collective too.
var _ train.StreamCollectives = (*faultyStreams)(nil)

type faultyStreams struct {
	*faulty
	sc train.StreamCollectives
}

func (f *faultyStreams) AllReduceSumTensor(ctx context.Context, x kernels.Tensor) error {
	if err := f.hit(); err != nil {
		return err
	}
	return f.sc.AllReduceSumTensor(ctx, x)
}

func (f *faultyStreams) BroadcastTensor(ctx context.Context, x kernels.Tensor, root int) error {
	if err := f.hit(); err != nil {
		return err
	}
	return f.sc.BroadcastTensor(ctx, x, root)
}

func (f *faultyStreams) ReduceScatterSumTensor(ctx context.Context, x kernels.Tensor) error {
	if err := f.hit(); err != nil {
		return err
	}
	return f.sc.ReduceScatterSumTensor(ctx, x)
}

func (f *faultyStreams) AllGatherTensor(ctx context.Context, x kernels.Tensor) error {
	if err := f.hit(); err != nil {
		return err
	}
	return f.sc.AllGatherTensor(ctx, x)
}

func (f *faultyStreams) StartAllReduceSumTensor(ctx context.Context, x kernels.Tensor) error {
	if err := f.hitComm(); err != nil {
		return err
	}
	return f.sc.StartAllReduceSumTensor(ctx, x)
}

func (f *faultyStreams) StartReduceSumTensor(ctx context.Context, x kernels.Tensor, root int) error {
	if err := f.hitComm(); err != nil {
		return err
	}
	return f.sc.StartReduceSumTensor(ctx, x, root)
}

func (f *faultyStreams) StartReduceScatterSumTensor(ctx context.Context, x kernels.Tensor) error {
	if err := f.hitComm(); err != nil {
		return err
	}
	return f.sc.StartReduceScatterSumTensor(ctx, x)
}

func (f *faultyStreams) FinishCollectives(ctx context.Context) error {
	return f.sc.FinishCollectives(ctx)
}
