package launch

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestSignalWhileWaitingForNode0: a node launcher (--node-rank 1) started before node
// 0's, or with a wrong --master-addr, waits in dist.DialAgent for up to --dist-timeout
// (10 minutes); a Ctrl-C (Config.Signals: cmd/train hands Run a context no signal
// cancels) ends the wait at once. It was read only once the ranks ran.
func TestSignalWhileWaitingForNode0(t *testing.T) {
	sigs := make(chan os.Signal, 2)
	cfg := Config{NProcPerNode: 1, NNodes: 2, NodeRank: 1, MasterAddr: "127.0.0.1", MasterPort: freePort(t), Token: "t",
		Program: "/bin/true", Signals: sigs, Timeout: 20 * time.Second}
	done := make(chan error, 1)
	go func() { done <- Run(context.Background(), cfg) }()
	time.Sleep(300 * time.Millisecond)
	sigs <- syscall.SIGINT
	sigs <- syscall.SIGINT
	select {
	case err := <-done:
		if !errors.Is(err, ErrInterrupted) {
			t.Errorf("got %v, want ErrInterrupted", err)
		}
	case <-time.After(4 * time.Second):
		t.Fatal("two SIGINTs while waiting for node 0's store: Run still waiting after 4s (until --dist-timeout)")
	}
}

// TestHostfileNodeSSHFailureStopsOthersPromptly: a host whose ssh fails at once
// (unreachable, refused, a bad key: ssh exits 255) never starts its launcher, and the
// other nodes could only wait for its ranks: their sessions are closed at once (they
// were left running for HostfileConfig.Wait, 2 minutes).
func TestHostfileNodeSSHFailureStopsOthersPromptly(t *testing.T) {
	script := `for a; do h=$p; p=$a; done
case "$h" in node1) echo "ssh: connect to host node1 port 22: Connection refused" >&2; exit 255;; esac
cat >/dev/null; exit 1`
	cfg := HostfileConfig{Hosts: []Host{{Name: "node0", Slots: 1}, {Name: "node1", Slots: 1}}, MasterPort: 29500, Token: "t",
		SSH: []string{"/bin/sh", "-c", script, "ssh"}, Program: "/bin/true", Dir: "/", Env: []string{}}
	done := make(chan error, 1)
	go func() { done <- RunHostfile(context.Background(), cfg) }()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "node 1 (node1): exit status 255: ssh: connect to host node1 port 22: Connection refused") {
			t.Fatalf("got %v", err)
		}
		// The next step: try ssh by hand as the launcher runs it.
		if !strings.Contains(err.Error(), "-o BatchMode=yes node1 true works from this host") {
			t.Errorf("no next step: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("node 1's ssh failed at once, but node 0 was left running for more than 10s")
	}
}

// TestHostfileSecondSignalForcesExit: under --hostfile the first Ctrl-C closes the ssh
// sessions (the remote launchers SIGTERM their ranks, with no kill timer, so that the
// checkpoint can be saved); a second one ends the sessions at once, as the node
// launcher and torchrun do (it closed the closed stdins again, and the ssh processes
// got a SIGTERM only after HostfileConfig.Wait).
func TestHostfileSecondSignalForcesExit(t *testing.T) {
	sigs := make(chan os.Signal, 2)
	cfg := HostfileConfig{Hosts: []Host{{Name: "node0", Slots: 1}, {Name: "node1", Slots: 1}}, MasterPort: 29500, Token: "t",
		// a remote launcher: stops on stdin's end, then its ranks take a while to save
		SSH:     []string{"/bin/sh", "-c", "cat >/dev/null; exec sleep 20", "ssh"},
		Program: "/bin/true", Dir: "/", Env: []string{}, Signals: sigs, Wait: 15 * time.Second}
	done := make(chan error, 1)
	go func() { done <- RunHostfile(context.Background(), cfg) }()
	time.Sleep(300 * time.Millisecond)
	sigs <- syscall.SIGINT
	time.Sleep(300 * time.Millisecond)
	sigs <- syscall.SIGINT
	start := time.Now()
	select {
	case err := <-done:
		if !errors.Is(err, ErrInterrupted) {
			t.Fatalf("%v", err)
		}
	case <-time.After(4 * time.Second):
		t.Fatal("a second Ctrl-C did not end the hostfile launcher within 4s")
	}
	t.Logf("returned %s after the second signal", time.Since(start))
}

// TestLaunchRankExitWithDescendantHoldingPipes: a rank that exits while a process it
// started still holds its stdout/stderr is seen to exit, and its failure reported
// (the launcher read the pipes to their end before cmd.Wait, which never came).
func TestLaunchRankExitWithDescendantHoldingPipes(t *testing.T) {
	cfg := Config{NProcPerNode: 1, MasterPort: freePort(t), Program: "/bin/sh",
		Args: []string{"-c", "echo bye >&2; sleep 10 & exit 3"}, StopGrace: time.Second}
	done := make(chan error, 1)
	go func() { done <- Run(context.Background(), cfg) }()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("no failure reported")
		}
	case <-time.After(4 * time.Second):
		t.Fatal("the rank exited with status 3 but Run did not return within 4s (it waits for a grandchild holding the rank's stderr)")
	}
}

// TestHostfileSSHDescendantHoldingPipes: the same for RunHostfile, whose ssh may leave a
// process behind holding its stderr (a ControlPersist master, a ProxyCommand helper).
func TestHostfileSSHDescendantHoldingPipes(t *testing.T) {
	cfg := HostfileConfig{Hosts: []Host{{Name: "node0", Slots: 1}}, MasterPort: 29500, Token: "t",
		SSH:     []string{"/bin/sh", "-c", "sleep 10 & exit 0", "ssh"},
		Program: "/bin/true", Dir: "/", Env: []string{}, Wait: time.Second}
	done := make(chan error, 1)
	go func() { done <- RunHostfile(context.Background(), cfg) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(4 * time.Second):
		t.Fatal("ssh exited 0 but RunHostfile did not return within 4s")
	}
}

// TestRepeatedSIGTERMDoesNotKillSave: a second SIGINT forces the exit, never a SIGTERM,
// which schedulers may repeat (docs/commands.md); the launcher killed its ranks on any
// second signal, cutting the checkpoint the first one started.
func TestRepeatedSIGTERMDoesNotKillSave(t *testing.T) {
	cfg, _, stderr := testConfig(t, "slowsave", 2)
	sigs := make(chan os.Signal, 2)
	cfg.Signals = sigs
	go func() {
		for !strings.Contains(stderr.String(), "hello from 1") || !strings.Contains(stderr.String(), "hello from 0") {
			time.Sleep(10 * time.Millisecond)
		}
		time.Sleep(100 * time.Millisecond)
		sigs <- syscall.SIGTERM
		time.Sleep(200 * time.Millisecond)
		sigs <- syscall.SIGTERM // the scheduler repeats it
	}()
	if err := Run(context.Background(), cfg); !errors.Is(err, ErrInterrupted) {
		t.Fatalf("%v\n%s", err, stderr)
	}
	if n := strings.Count(stderr.String(), "saved"); n != 2 {
		t.Fatalf("%d ranks saved, want 2 (a repeated SIGTERM killed them):\n%s", n, stderr)
	}
}

// TestMasterAddrResolvingToLoopback: a job on two nodes whose master address is this
// host's name, resolving to loopback (Debian's /etc/hosts), stops at once naming it;
// the other nodes would wait --dist-timeout for a store they cannot reach.
func TestMasterAddrResolvingToLoopback(t *testing.T) {
	host, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	if ips, err := net.LookupIP(host); err != nil || len(ips) == 0 || !ips[0].IsLoopback() || host == "localhost" {
		t.Skipf("%s does not resolve to loopback only here (%v %v)", host, ips, err)
	}
	cfg := Config{NProcPerNode: 1, NNodes: 2, NodeRank: 0, MasterAddr: host, MasterPort: freePort(t), Token: "t",
		Program: "/bin/true", Timeout: 20 * time.Second}
	if err := Run(context.Background(), cfg); err == nil || !strings.Contains(err.Error(), "loopback") {
		t.Fatalf("got %v, want the master address refused", err)
	}
}

// TestFailureThenSignalReportsFailure: a rank fails, and a Ctrl-C comes while the others
// stop: the launcher reports the failure (it said only "interrupted", and the failed
// rank's last words were lost).
func TestFailureThenSignalReportsFailure(t *testing.T) {
	cfg, _, stderr := testConfig(t, "fail1slow", 2)
	sigs := make(chan os.Signal, 1)
	cfg.Signals = sigs
	go func() {
		for !strings.Contains(stderr.String(), "stopping the others") {
			time.Sleep(10 * time.Millisecond)
		}
		sigs <- syscall.SIGINT
	}()
	err := Run(context.Background(), cfg)
	if err == nil || errors.Is(err, ErrInterrupted) || !strings.Contains(err.Error(), "rank 1 exited with status 3") || !strings.Contains(err.Error(), "out of cheese") {
		t.Fatalf("got %v, want rank 1's failure\n%s", err, stderr)
	}
}

// TestKillTakesTheRanksChildren: a rank still running after the grace period is killed
// with its process group, so a child it started (holding its pipes, or GPU memory) does
// not outlive it (SIGKILL went to the rank's pid alone).
func TestKillTakesTheRanksChildren(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "child.pid")
	cfg := Config{NProcPerNode: 1, MasterPort: freePort(t), Program: "/bin/sh", StopGrace: 300 * time.Millisecond,
		Args: []string{"-c", "trap '' INT TERM; sleep 30 & echo $! > " + pidFile + "; wait; wait"}}
	sigs := make(chan os.Signal, 1)
	cfg.Signals = sigs
	go func() {
		for {
			if b, err := os.ReadFile(pidFile); err == nil && len(b) > 0 {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		sigs <- syscall.SIGINT
	}()
	done := make(chan error, 1)
	go func() { done <- Run(context.Background(), cfg) }()
	var pid int
	for deadline := time.Now().Add(10 * time.Second); pid == 0 && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if b, err := os.ReadFile(pidFile); err == nil {
			pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		}
	}
	if pid == 0 {
		t.Fatal("the rank did not start its child")
	}
	time.Sleep(100 * time.Millisecond)
	sigs <- syscall.SIGINT // the second: kill
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after the second Ctrl-C")
	}
	time.Sleep(100 * time.Millisecond)
	// Alive: in /proc and not a zombie (a killed orphan may wait a while for its reaper).
	if stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); err == nil && !strings.Contains(string(stat), ") Z ") {
		syscall.Kill(pid, syscall.SIGKILL)
		t.Errorf("the rank's child %d outlived the kill: %s", pid, stat)
	}
}

// TestHostfileFailureThenSignalReportsFailure: a node whose launcher failed (its rank
// did), then a Ctrl-C while the other nodes stop: RunHostfile reports the node's
// failure, as Run does for a rank (it said only "interrupted", and the failure was
// lost from the last line).
func TestHostfileFailureThenSignalReportsFailure(t *testing.T) {
	script := `for a; do h=$p; p=$a; done
case "$h" in node1) echo "train: launch: rank 1 exited with status 3: out of cheese" >&2; exit 1;; esac
cat >/dev/null; exec sleep 20`
	sigs := make(chan os.Signal, 1)
	cfg := HostfileConfig{Hosts: []Host{{Name: "node0", Slots: 1}, {Name: "node1", Slots: 1}}, MasterPort: 29500, Token: "t",
		SSH: []string{"/bin/sh", "-c", script, "ssh"}, Program: "/bin/true", Dir: "/", Env: []string{}, Signals: sigs, Wait: 2 * time.Second}
	done := make(chan error, 1)
	go func() { done <- RunHostfile(context.Background(), cfg) }()
	time.Sleep(500 * time.Millisecond) // node 1 has failed
	sigs <- syscall.SIGINT
	select {
	case err := <-done:
		if err == nil || errors.Is(err, ErrInterrupted) || !strings.Contains(err.Error(), "node 1 (node1)") || !strings.Contains(err.Error(), "out of cheese") {
			t.Fatalf("got %v, want node 1's failure", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("RunHostfile did not return")
	}
}

// TestHostfileSSHConnectTimeout: ssh gets a connect timeout, so that a host whose
// packets go nowhere fails in seconds (ssh waited the kernel's two minutes of SYN
// retries); one given in --ssh wins, as ssh takes an option's first value.
func TestHostfileSSHConnectTimeout(t *testing.T) {
	argsFile := filepath.Join(t.TempDir(), "args")
	cfg := HostfileConfig{Hosts: []Host{{Name: "node0", Slots: 1}}, MasterPort: 29500, Token: "t",
		SSH:     []string{"/bin/sh", "-c", `printf '%s\n' "$@" > ` + argsFile + `; head -n 1 >/dev/null`, "ssh", "-o", "ConnectTimeout=5"},
		Program: "/bin/true", Dir: "/", Env: []string{}}
	if err := RunHostfile(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(argsFile)
	if err != nil {
		t.Fatal(err)
	}
	args := strings.Join(strings.Fields(string(b)), " ")
	if !strings.HasPrefix(args, "-o ConnectTimeout=5 -T -o BatchMode=yes -o ConnectTimeout=30 node0 cd ") {
		t.Errorf("ssh's arguments: %s", args)
	}
}
