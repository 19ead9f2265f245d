package launch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"gptkit/train/dist"
)

// HostfileConfig starts one launcher per host over ssh.
type HostfileConfig struct {
	Hosts      []Host
	MasterPort int
	Token      string   // the job token (generated when empty); sent on ssh's stdin
	SSH        []string // the ssh command (nil: ssh); the launcher adds -T -o BatchMode=yes -o ConnectTimeout=30 HOST COMMAND
	Dir        string   // the working directory on every host (nil: this one's)
	Program    string   // the program on every host (the same path everywhere, as with DeepSpeed)
	// Args are the launcher's arguments on every host; RunHostfile adds
	// --nnodes, --node-rank, --nproc-per-node, --master-addr, --master-port and
	// --remote (its token on stdin).
	Args []string
	// Env are the variables ("K=V") set on every host's command line, as ssh
	// passes none of this process's (nil: ForwardedEnv of this process's).
	Env []string

	Stdout, Stderr io.Writer
	Signals        <-chan os.Signal
	// Wait bounds how long the other hosts get to finish after one failed (0: 2 minutes).
	Wait   time.Duration
	Logger *slog.Logger
}

// RemoteFlag is the flag RunHostfile adds for the remote launchers: read the job
// token from stdin's first line, and stop when stdin closes.
const RemoteFlag = "--remote"

// RemoteCommand is the command line RunHostfile runs on host i, quoted for the
// remote shell.
func (c *HostfileConfig) RemoteCommand(i int) string {
	words := append([]string{c.Program}, c.Args...)
	words = append(words,
		"--nnodes", strconv.Itoa(len(c.Hosts)),
		"--node-rank", strconv.Itoa(i),
		"--nproc-per-node", strconv.Itoa(c.Hosts[i].Slots),
		"--master-addr", masterHost(c.Hosts[0].Name),
		"--master-port", strconv.Itoa(c.MasterPort),
		RemoteFlag)
	if len(c.Env) > 0 {
		words = append(append([]string{"env"}, c.Env...), words...)
	}
	return "cd " + shellQuote(c.Dir) + " && exec " + shellCommand(words)
}

// ForwardedEnv picks from environ ("K=V" each) what a remote launcher gets on
// its command line, as DeepSpeed's launcher exports NCCL_*, UCX_* and the
// like to its nodes: NCCL's own settings (NCCL_IB_DISABLE, NCCL_SOCKET_IFNAME,
// NCCL_DEBUG, ...), UCX's, and gptkit's GPTKIT_* except the job token (which
// travels on stdin, never on a command line). CUDA_VISIBLE_DEVICES stays
// behind: each host has its own GPUs.
func ForwardedEnv(environ []string) []string {
	var out []string
	for _, kv := range environ {
		k, _, ok := strings.Cut(kv, "=")
		switch {
		case !ok || k == dist.EnvToken:
		case strings.HasPrefix(k, "NCCL_"), strings.HasPrefix(k, "UCX_"), strings.HasPrefix(k, "GPTKIT_"):
			out = append(out, kv)
		}
	}
	slices.Sort(out)
	return out
}

// RunHostfile starts a launcher on every host of the hostfile over ssh (GPT-NeoX
// starts its nodes with pdsh the same way), forwards their output (node 0's stdout
// to Stdout, everything else to Stderr), and waits. The first host is the master.
func RunHostfile(ctx context.Context, c HostfileConfig) error {
	if err := checkSystem(); err != nil {
		return err
	}
	if len(c.Hosts) == 0 {
		return errors.New("launch: the hostfile names no host")
	}
	if c.Token == "" {
		c.Token = NewToken()
	}
	if len(c.SSH) == 0 {
		c.SSH = []string{"ssh"}
	}
	if c.Env == nil {
		c.Env = ForwardedEnv(os.Environ())
	}
	if c.Dir == "" {
		wd, err := os.Getwd()
		if err != nil {
			return err
		}
		c.Dir = wd
	}
	if c.Stdout == nil {
		c.Stdout = io.Discard
	}
	if c.Stderr == nil {
		c.Stderr = io.Discard
	}
	if c.Wait <= 0 {
		c.Wait = 2 * time.Minute
	}
	log := c.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	errSink, outSink := lineSink{mu: &sync.Mutex{}, w: c.Stderr}, lineSink{mu: &sync.Mutex{}, w: c.Stdout}
	spawn := startSpawner()
	defer close(spawn)

	type node struct {
		cmd   *exec.Cmd
		stdin io.WriteCloser
	}
	type done struct {
		i    int
		err  error
		last string
	}
	dones := make(chan done, len(c.Hosts))
	var nodes []node
	closeAll := func() {
		for _, n := range nodes {
			n.stdin.Close()
		}
	}
	for i, h := range c.Hosts {
		// ConnectTimeout: a host whose packets go nowhere (down, a firewall that
		// drops) fails in seconds, as pdsh's connect timeout does, not after the
		// kernel's two minutes of SYN retries. ssh takes an option's first value:
		// one in --ssh wins.
		args := append(append([]string(nil), c.SSH[1:]...), "-T", "-o", "BatchMode=yes", "-o", "ConnectTimeout="+strconv.Itoa(sshConnectTimeout), h.Name, c.RemoteCommand(i))
		cmd := exec.Command(c.SSH[0], args...)
		stdin, err := cmd.StdinPipe()
		var pipes *outputPipes
		if err == nil {
			pipes, err = newOutputPipes(cmd)
		}
		if err == nil {
			detach(cmd)
			req := spawnReq{cmd: cmd, done: make(chan error, 1)}
			spawn <- req
			err = <-req.done
			pipes.started(err == nil)
		}
		if err != nil {
			closeAll()
			for range nodes {
				<-dones
			}
			return fmt.Errorf("launch: start %s for host %s: %w", c.SSH[0], h.Name, err)
		}
		log.Info("node started", "host", h.Name, "node_rank", i, "slots", h.Slots)
		// The token, then stdin stays open: its end stops the remote launcher.
		io.WriteString(stdin, c.Token+"\n")
		nodes = append(nodes, node{cmd: cmd, stdin: stdin})
		if i == 0 {
			pipes.copy(outSink, "", errSink, "")
		} else {
			pipes.copy(errSink, "", errSink, "")
		}
		go func() {
			last, err := pipes.wait(cmd)
			dones <- done{i: i, err: err, last: last}
		}()
	}

	var first error
	interrupted, signals := false, 0
	failedFirst := false // a node failed before the first signal
	exited := make([]bool, len(nodes))
	kill := func(sig syscall.Signal) {
		for i, n := range nodes {
			if !exited[i] { // (cmd.ProcessState is the waiting goroutine's)
				n.cmd.Process.Signal(sig)
			}
		}
	}
	var deadline <-chan time.Time
	ctxDone := ctx.Done()
	for left := len(nodes); left > 0; {
		select {
		case d := <-dones:
			left--
			exited[d.i] = true
			if d.err != nil && first == nil {
				msg := fmt.Sprintf("node %d (%s): %v", d.i, c.Hosts[d.i].Name, d.err)
				if d.last != "" {
					msg += ": " + d.last
				}
				if sshFailed(d.err) {
					msg += fmt.Sprintf(" (ssh itself failed: check that %s -o BatchMode=yes %s true works from this host; BatchMode asks for no password: use a key, e.g. in ssh-agent)", strings.Join(c.SSH, " "), c.Hosts[d.i].Name)
				}
				first = errors.New("launch: " + msg)
				if sshFailed(d.err) {
					// ssh's own failure (255: unreachable, refused, a bad key): that
					// node's launcher never ran, or is cut off, and the others would
					// only wait for its ranks: they stop now, saving a checkpoint.
					log.Error("ssh to a node failed; stopping the others", "node", d.i, "err", d.err)
					closeAll()
				} else {
					log.Error("a node failed; the others stop on their own, or in a while", "node", d.i, "err", d.err)
				}
				deadline = time.After(c.Wait)
			}
		case sig := <-c.Signals:
			failedFirst = failedFirst || !interrupted && first != nil
			interrupted = true
			if signals++; signals > 1 && sig == os.Interrupt {
				// A second Ctrl-C: end the ssh sessions now (the remote launchers,
				// cut off, stop where they stand).
				log.Warn("second interrupt: ending the ssh sessions")
				kill(syscall.SIGKILL)
				continue
			}
			closeAll() // the remote launchers forward a SIGTERM to their ranks
			if deadline == nil {
				deadline = time.After(c.Wait)
			}
		case <-ctxDone:
			ctxDone = nil
			failedFirst = failedFirst || !interrupted && first != nil
			interrupted = true
			closeAll()
			if deadline == nil {
				deadline = time.After(c.Wait)
			}
		case <-deadline:
			log.Warn("nodes still running; closing their connections")
			closeAll()
			kill(syscall.SIGTERM)
			deadline = time.After(c.Wait)
		}
	}
	closeAll()
	if failedFirst {
		// A node failed, and a signal came while the others stopped: the failure is
		// what to say (as Run does), not "interrupted".
		return fmt.Errorf("%w (and a signal came while the other nodes stopped)", first)
	}
	if interrupted {
		return ErrInterrupted
	}
	return first
}

// sshConnectTimeout is ssh's ConnectTimeout, in seconds, for the hostfile's hosts.
const sshConnectTimeout = 30

// sshFailed reports whether err is ssh's exit status 255, its own failure (a remote
// command's status is passed through, and a launcher's are 0, 1 or 130).
func sshFailed(err error) bool {
	var ee *exec.ExitError
	return errors.As(err, &ee) && ee.ExitCode() == 255
}

// NewToken returns a fresh job token.
func NewToken() string { return newToken() }
