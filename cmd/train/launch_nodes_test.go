package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"gptkit/internal/sharedtest"
	"gptkit/internal/slurmtest"
)

// nodes are simulated hosts: network namespaces joined by a veth pair, as infra.md
// §3 sets them up.
type nodes struct {
	ns  []string // namespace names
	ips []string // their addresses
}

// netnsPair makes two namespaces with addresses on a private /24 (removed at the
// test's end). It needs root and iproute2's ip: without them the test fails when
// CI=true and skips otherwise.
func netnsPair(t *testing.T) nodes {
	t.Helper()
	if _, err := exec.LookPath("ip"); err != nil {
		sharedtest.Missing(t, "the ip command (apt-get install iproute2) for network namespaces")
	}
	if os.Geteuid() != 0 {
		sharedtest.Missing(t, "root, to create network namespaces")
	}
	id := os.Getpid() % 100000
	n := nodes{ns: []string{fmt.Sprintf("gk%da", id), fmt.Sprintf("gk%db", id)}}
	subnet := fmt.Sprintf("10.%d.%d", 100+id%100, (id/100)%250)
	n.ips = []string{subnet + ".1", subnet + ".2"}
	veth := []string{fmt.Sprintf("gkv%da", id), fmt.Sprintf("gkv%db", id)}
	ip := func(args ...string) {
		t.Helper()
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			t.Fatalf("ip %s: %v: %s", strings.Join(args, " "), err, out)
		}
	}
	t.Cleanup(func() {
		for _, ns := range n.ns {
			exec.Command("ip", "netns", "del", ns).Run()
		}
	})
	for _, ns := range n.ns {
		ip("netns", "add", ns)
	}
	ip("link", "add", veth[0], "type", "veth", "peer", "name", veth[1])
	for i, ns := range n.ns {
		ip("link", "set", veth[i], "netns", ns)
		ip("-n", ns, "addr", "add", n.ips[i]+"/24", "dev", veth[i])
		ip("-n", ns, "link", "set", veth[i], "up")
		ip("-n", ns, "link", "set", "lo", "up")
	}
	return n
}

// TestTwoNodes: two simulated nodes, each running the launcher with --nnodes 2 and
// two ranks, train the single process's loss curve. Then a rank on node 1 is
// killed: with --max-restarts 1 both launchers restart their ranks, which resume
// from the newest checkpoint and finish with the uninterrupted run's metrics.
func TestTwoNodes(t *testing.T) {
	if testing.Short() {
		t.Skip("runs processes in network namespaces")
	}
	n := netnsPair(t)
	data, _ := makeCharDataset(t)
	single := singleRun(t, data, 8, 12, 4)
	run := func(out string, env []string, extra ...string) []procResult {
		port := freePort(t)
		env = append(env, "GPTKIT_JOB_TOKEN=two-nodes-"+port)
		results := make([]procResult, 2)
		var wg sync.WaitGroup
		for node := range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				args := append([]string{"netns", "exec", n.ns[node], os.Args[0]}, dpArgs(data, out, 2, 12, 4)...)
				args = append(args, "--nproc-per-node", "2", "--nnodes", "2", "--node-rank", fmt.Sprint(node),
					"--master-addr", n.ips[0], "--master-port", port)
				results[node] = command(t, 2*time.Minute, env, "ip", append(args, extra...)...)
			}()
		}
		wg.Wait()
		return results
	}

	out := filepath.Join(t.TempDir(), "two")
	res := run(out, nil)
	for node, r := range res {
		if r.code != 0 {
			t.Fatalf("node %d: exit %d:\n%s", node, r.code, r.stderr)
		}
	}
	if parseSummary(t, res[0].stdout).Step != 12 || res[1].stdout != "" || !strings.Contains(res[1].stderr, "[rank 3] ") {
		t.Errorf("stdout %q and %q; node 1 stderr:\n%s", res[0].stdout, res[1].stdout, res[1].stderr)
	}
	closeLosses(t, readMetrics(t, out), readMetrics(t, single), 1e-5)

	// Rank 3 (node 1) killed mid-step; one restart.
	out = filepath.Join(t.TempDir(), "restarted")
	res = run(out, []string{faultEnv + "=kill:3:40"}, "--max-restarts", "1")
	for node, r := range res {
		if r.code != 0 || !strings.Contains(r.stderr, "restarting the group") {
			t.Fatalf("node %d: exit %d, want a restart and success:\n%s", node, r.code, r.stderr)
		}
	}
	if sum := parseSummary(t, res[0].stdout); sum.Resumed == "" {
		t.Errorf("summary %+v: not resumed", sum)
	}
	closeLosses(t, readMetrics(t, out), readMetrics(t, single), 1e-5)

	// Without restarts both nodes stop, naming rank 3.
	res = run(filepath.Join(t.TempDir(), "failed"), []string{faultEnv + "=kill:3:40"})
	for node, r := range res {
		if r.code != 1 || !strings.Contains(lastLine(r.stderr), "rank 3") {
			t.Errorf("node %d: exit %d, last line %q; want 1 and rank 3 named", node, r.code, lastLine(r.stderr))
		}
		if r.took > 60*time.Second {
			t.Errorf("node %d took %s to stop", node, r.took)
		}
	}
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

// TestHostfile (on cuda-sim, each host with its own simulated GPUs): --hostfile starts a launcher on each host over ssh. Here "ssh" is
// a stand-in that runs the command line in the host's network namespace through
// sh -c, as sshd runs it through the user's shell: so the quoting is tested
// against a real shell, and the token on stdin and the namespaces' network too.
func TestHostfile(t *testing.T) {
	if testing.Short() {
		t.Skip("runs processes in network namespaces")
	}
	n := netnsPair(t)
	data, _ := makeCharDataset(t)
	dir := t.TempDir()
	hostfile := filepath.Join(dir, "hostfile")
	os.WriteFile(hostfile, []byte(fmt.Sprintf("# two nodes\n%s slots=2\n%s slots=2\n", n.ips[0], n.ips[1])), 0o644)
	ssh := filepath.Join(dir, "fake-ssh")
	script := fmt.Sprintf(`#!/bin/sh
# fake ssh: [options] HOST COMMAND -> the command in HOST's namespace, via sh -c.
while [ $# -gt 0 ]; do
  case "$1" in
    -o|-p|-i|-l) shift 2 ;;
    -*) shift ;;
    *) break ;;
  esac
done
host="$1"; shift
echo "$host" >> %q
case "$host" in
  %s) ns=%s ;;
  %s) ns=%s ;;
  *) echo "fake-ssh: unknown host $host" >&2; exit 255 ;;
esac
# as sshd, a clean environment: only what the command line sets reaches the launcher
# (and the host's own name for the simulated GPUs, as a real host has its own GPUs)
exec ip netns exec "$ns" env -i PATH="$PATH" HOME="$HOME" GPTKIT_SIM_HOST="$host" sh -c "$*"
`, filepath.Join(dir, "hosts.log"), n.ips[0], n.ns[0], n.ips[1], n.ns[1])
	os.WriteFile(ssh, []byte(script), 0o755)

	out := filepath.Join(dir, "run with 'quotes' and $dollars")
	ncclEnv := []string{"NCCL_DEBUG=WARN", "NCCL_SOCKET_IFNAME=gkv"}
	r := trainProc(t, 2*time.Minute, ncclEnv, append(simDPArgs(data, out, 2, 12, 4), "--hostfile", hostfile, "--ssh", ssh, "--master-port", freePort(t))...)
	if r.code != 0 {
		t.Fatalf("exit %d:\n%s", r.code, r.stderr)
	}
	if sum := parseSummary(t, r.stdout); sum.Step != 12 || !strings.HasPrefix(sum.Checkpoint, out) {
		t.Errorf("summary %q", r.stdout)
	}
	for _, want := range []string{"[rank 0] ", "[rank 3] ", "node started"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
		}
	}
	if logged, _ := os.ReadFile(filepath.Join(dir, "hosts.log")); strings.Count(string(logged), "\n") != 2 {
		t.Errorf("ssh ran for %q", logged)
	}
	// NCCL's environment reached every rank on both hosts, through ssh.
	if got := strings.Count(r.stderr, `nccl_env="NCCL_DEBUG=WARN NCCL_SOCKET_IFNAME=gkv"`); got != 4 {
		t.Errorf("%d ranks of 4 saw NCCL's environment:\n%s", got, r.stderr)
	}
	if strings.Contains(r.stderr, "two-nodes") || strings.Contains(r.stderr, "GPTKIT_JOB_TOKEN=") {
		t.Errorf("the token shows in the output")
	}
}

// TestSrun: `srun -n 4 bin/train ...` on a real (single-node) SLURM trains with no
// launcher flags: the ranks read SLURM's environment.
func TestSrun(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a SLURM cluster")
	}
	c := slurmtest.Start(t)
	data, _ := makeCharDataset(t)
	single := singleRun(t, data, 8, 12, 4)
	out := filepath.Join(t.TempDir(), "srun")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := c.Command(ctx, "srun", append([]string{"-n", "4", "--kill-on-bad-exit=1", os.Args[0]}, dpArgs(data, out, 2, 12, 4)...)...)
	cmd.Env = append(cmd.Env, mainEnv+"=1", "MASTER_PORT="+freePort(t))
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("srun: %v\n%s\n%s", err, stderr.String(), c.Logs())
	}
	if !strings.Contains(stderr.String(), "source=slurm") {
		t.Errorf("the ranks did not take their place from SLURM:\n%s", stderr.String())
	}
	if sum := parseSummary(t, stdout.String()); sum.Step != 12 {
		t.Errorf("stdout %q", stdout.String())
	}
	closeLosses(t, readMetrics(t, out), readMetrics(t, single), 1e-5)
}
