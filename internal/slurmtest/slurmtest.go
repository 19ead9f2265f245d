// Package slurmtest runs a real one-node SLURM cluster (Debian's slurm-wlm with munge) in a
// test's temp directory, so that array-job code is tested against sbatch, the scheduler and
// slurmd rather than against a fake.
//
// Start writes a slurm.conf (free ports, state, spool and logs under the temp directory, no
// accounting, no cgroup confinement), starts munged, slurmctld and slurmd in the
// foreground as the test's children, and waits until the node is idle (about a second).
// Client commands find the cluster through SLURM_CONF: Env and Setenv give it to
// subprocesses and to code that runs sbatch in-process. Stop (registered with tb.Cleanup)
// cancels the cluster's jobs and stops the daemons.
//
// The daemons run as root (SlurmUser=root), as a single-machine test cluster must. Where
// the binaries are missing (tools/install-slurm.sh installs them) or the test is not root,
// Start fails when CI=true and skips otherwise (sharedtest.Missing).
//
// Hand-written because no Go library starts SLURM: the configuration is the one measured
// working on the project's Debian 12 machines (shared/notes/infra.md §2).
package slurmtest

import (
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"gptkit/internal/freeport"
	"gptkit/internal/sharedtest"
)

// Binaries are the programs a cluster needs: daemons and the client commands tests use.
var Binaries = []string{"munged", "slurmctld", "slurmd", "sbatch", "squeue", "scontrol", "scancel", "sinfo"}

// readyTimeout bounds how long Start waits for the node to become idle.
const readyTimeout = 30 * time.Second

// Cluster is a running one-node SLURM cluster.
type Cluster struct {
	Dir  string // the cluster's directory: slurm.conf, state, spool, logs, munge
	Conf string // Dir/slurm.conf, the SLURM_CONF of clients
	Node string // the node's name
	CPUs int    // CPUs the node offers (more than the machine has: jobs share cores)

	daemons []*daemon
	stopped sync.Once
}

type daemon struct {
	name   string
	cmd    *exec.Cmd
	out    *bytes.Buffer
	exited chan struct{}
}

// Missing returns what keeps a cluster from starting here ("" when nothing does): a
// binary not on PATH, or not running as root.
func Missing() string {
	var lack []string
	for _, b := range Binaries {
		if _, err := exec.LookPath(b); err != nil {
			lack = append(lack, b)
		}
	}
	if len(lack) > 0 {
		return "SLURM binaries " + strings.Join(lack, ", ") + " (run tools/install-slurm.sh: apt-get install slurm-wlm munge)"
	}
	if os.Geteuid() != 0 {
		return "root: the test SLURM cluster runs its daemons as root"
	}
	return ""
}

// Start starts a cluster for this test and stops it at tb.Cleanup. It skips (or, with
// CI=true, fails) the test where SLURM cannot run (see Missing).
func Start(tb testing.TB) *Cluster {
	tb.Helper()
	if m := Missing(); m != "" {
		sharedtest.Missing(tb, "%s", m)
	}
	dir, err := os.MkdirTemp("", "slurmtest-") // short: slurmd's socket path must fit sun_path
	if err != nil {
		tb.Fatal(err)
	}
	c, err := start(dir)
	if err != nil {
		if c != nil {
			c.Stop()
		}
		os.RemoveAll(dir)
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		c.Stop()
		if !tb.Failed() {
			os.RemoveAll(dir)
		} else {
			tb.Logf("slurmtest: cluster files kept in %s", dir)
		}
	})
	return c
}

func start(dir string) (*Cluster, error) {
	c := &Cluster{Dir: dir, Conf: filepath.Join(dir, "slurm.conf"), Node: "localhost", CPUs: max(runtime.NumCPU(), 8)}
	for _, sub := range []string{"state", "spool", "log", "munge"} {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o700); err != nil {
			return nil, fmt.Errorf("slurmtest: %w", err)
		}
	}
	key := make([]byte, 1024)
	rand.Read(key)
	if err := os.WriteFile(filepath.Join(dir, "munge", "munge.key"), key, 0o400); err != nil {
		return nil, fmt.Errorf("slurmtest: munge key: %w", err)
	}
	ports, err := freePorts(2)
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(c.Conf, []byte(c.config(ports[0], ports[1])), 0o644); err != nil {
		return nil, fmt.Errorf("slurmtest: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "cgroup.conf"), []byte(cgroupConf()), 0o644); err != nil {
		return nil, fmt.Errorf("slurmtest: %w", err)
	}
	m := filepath.Join(dir, "munge")
	if err := c.startDaemon("munged", "--foreground", "--force", "--key-file="+filepath.Join(m, "munge.key"),
		"--socket="+c.mungeSocket(), "--pid-file="+filepath.Join(m, "munged.pid"),
		"--log-file="+filepath.Join(m, "munged.log"), "--seed-file="+filepath.Join(m, "munge.seed")); err != nil {
		return c, err
	}
	if err := c.waitFor(func() bool { _, err := os.Stat(c.mungeSocket()); return err == nil }, "munged's socket"); err != nil {
		return c, err
	}
	if err := c.startDaemon("slurmctld", "-D", "-i", "-f", c.Conf); err != nil {
		return c, err
	}
	if err := c.startDaemon("slurmd", "-D", "-f", c.Conf, "-N", c.Node); err != nil {
		return c, err
	}
	if err := c.waitFor(c.idle, "the node to be idle (sinfo)"); err != nil {
		return c, err
	}
	return c, nil
}

// mungeSocket is short enough for a unix socket path.
func (c *Cluster) mungeSocket() string { return filepath.Join(c.Dir, "munge", "sock") }

// config is slurm.conf: infra.md §2's, with free ports, a node that claims c.CPUs CPUs
// (config_overrides: it is not checked against the hardware) and quick scheduling.
func (c *Cluster) config(ctlPort, dPort int) string {
	d := c.Dir
	return fmt.Sprintf(`ClusterName=gptkittest
SlurmctldHost=localhost
SlurmUser=root
SlurmdUser=root
SlurmctldPort=%d
SlurmdPort=%d
AuthType=auth/munge
AuthInfo=socket=%s
CredType=cred/munge
MailProg=/bin/true
StateSaveLocation=%s/state
SlurmdSpoolDir=%s/spool
SlurmctldPidFile=%s/slurmctld.pid
SlurmdPidFile=%s/slurmd.pid
SlurmctldLogFile=%s/log/slurmctld.log
SlurmdLogFile=%s/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
MpiDefault=none
ReturnToService=2
SchedulerType=sched/backfill
SchedulerParameters=sched_min_interval=0,batch_sched_delay=0
SlurmdParameters=config_overrides
SlurmctldTimeout=30
SlurmdTimeout=30
KillWait=2
MinJobAge=600
NodeName=%s CPUs=%d State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
`, ctlPort, dPort, c.mungeSocket(), d, d, d, d, d, d, c.Node, c.CPUs)
}

// cgroupConf picks the cgroup plugin slurmd loads even with proctrack/linuxproc
// ("disabled" fails in 22.05): v2 where the unified hierarchy is mounted at the root.
func cgroupConf() string {
	if _, err := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err == nil {
		return "CgroupPlugin=cgroup/v2\n"
	}
	return "CgroupPlugin=cgroup/v1\n"
}

func (c *Cluster) startDaemon(name string, args ...string) error {
	d := &daemon{name: name, out: new(bytes.Buffer), exited: make(chan struct{})}
	d.cmd = exec.Command(name, args...)
	d.cmd.Env = append(os.Environ(), c.Env()...)
	d.cmd.Stdout, d.cmd.Stderr = d.out, d.out
	d.cmd.SysProcAttr = sysProcAttr()
	if err := d.cmd.Start(); err != nil {
		return fmt.Errorf("slurmtest: start %s: %w", name, err)
	}
	go func() { d.cmd.Wait(); close(d.exited) }()
	c.daemons = append(c.daemons, d)
	return nil
}

// waitFor polls ok until it holds, failing if a daemon exits or readyTimeout passes.
func (c *Cluster) waitFor(ok func() bool, what string) error {
	deadline := time.Now().Add(readyTimeout)
	for !ok() {
		for _, d := range c.daemons {
			select {
			case <-d.exited:
				return fmt.Errorf("slurmtest: %s exited (%v) while waiting for %s; its output:\n%s\nlogs in %s:\n%s", d.name, d.cmd.ProcessState, what, d.out, c.Dir, c.logs())
			default:
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("slurmtest: no %s after %v; logs in %s:\n%s", what, readyTimeout, c.Dir, c.logs())
		}
		time.Sleep(50 * time.Millisecond)
	}
	return nil
}

// idle reports whether sinfo shows the node idle.
func (c *Cluster) idle() bool {
	out, err := c.Command(context.Background(), "sinfo", "-h", "-N", "-o", "%T").Output()
	return err == nil && strings.TrimSpace(string(out)) == "idle"
}

// logs returns the tails of the daemons' log files, for failure messages.
func (c *Cluster) logs() string {
	var b strings.Builder
	for _, name := range []string{"log/slurmctld.log", "log/slurmd.log", "munge/munged.log"} {
		data, _ := os.ReadFile(filepath.Join(c.Dir, name))
		if len(data) > 4000 {
			data = data[len(data)-4000:]
		}
		fmt.Fprintf(&b, "== %s\n%s\n", name, data)
	}
	return b.String()
}

// Env returns what client commands need to reach the cluster: SLURM_CONF.
func (c *Cluster) Env() []string { return []string{"SLURM_CONF=" + c.Conf} }

// Setenv sets Env's variables for the rest of the test (t.Setenv: not in parallel tests),
// for code that runs sbatch itself.
func (c *Cluster) Setenv(tb testing.TB) {
	tb.Helper()
	t, ok := tb.(interface{ Setenv(k, v string) })
	if !ok {
		tb.Fatalf("slurmtest: Setenv needs a *testing.T or *testing.B, got %T", tb)
	}
	for _, kv := range c.Env() {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
}

// Command is exec.CommandContext for a SLURM client command (sbatch, squeue, ...) aimed
// at the cluster.
func (c *Cluster) Command(ctx context.Context, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = append(os.Environ(), c.Env()...)
	return cmd
}

// Logs returns the tails of the cluster's daemon logs (for test failure messages).
func (c *Cluster) Logs() string { return c.logs() }

// Stop cancels the cluster's jobs and stops its daemons (SIGTERM, then SIGKILL after 10 s).
// Start registers it with tb.Cleanup; calling it again does nothing.
func (c *Cluster) Stop() {
	c.stopped.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if len(c.daemons) == 3 {
			c.Command(ctx, "scancel", "--full", "--partition=debug").Run()
			// Give slurmd a moment to end the steps it runs before it goes.
			deadline := time.Now().Add(5 * time.Second)
			for time.Now().Before(deadline) {
				out, err := c.Command(ctx, "squeue", "-h", "-o", "%i").Output()
				if err != nil || len(bytes.TrimSpace(out)) == 0 {
					break
				}
				time.Sleep(100 * time.Millisecond)
			}
		}
		for i := len(c.daemons) - 1; i >= 0; i-- { // slurmd, slurmctld, then munged
			d := c.daemons[i]
			d.cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-d.exited:
			case <-time.After(10 * time.Second):
				d.cmd.Process.Kill()
				<-d.exited
			}
		}
	})
}

func freePorts(n int) ([]int, error) {
	ports, err := freeport.Pick(n)
	if err != nil {
		return nil, fmt.Errorf("slurmtest: %w", err)
	}
	return ports, nil
}
