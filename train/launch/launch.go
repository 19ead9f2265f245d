package launch

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"gptkit/train/dist"
)

// Config is one node's launcher.
type Config struct {
	NProcPerNode int    // ranks on this node
	NNodes       int    // nodes (0 means 1)
	NodeRank     int    // this node's rank in [0, NNodes)
	MasterAddr   string // node 0's address (the store's host)
	MasterPort   int    // the store's port
	MaxRestarts  int    // group restarts after a failure
	Token        string // the job token (required with several nodes; else generated when empty)

	Program string   // the rank's executable
	Args    []string // its arguments
	Env     []string // the base environment of the ranks (nil: this process's)

	Stdout io.Writer // rank 0's stdout, verbatim
	Stderr io.Writer // every rank's stderr (and the other ranks' stdout), each line after "[rank R] "

	// Signals are forwarded to the ranks (the first as it is, a second as
	// SIGKILL); ctx's end counts as a SIGTERM.
	Signals <-chan os.Signal
	// Stop, when closed, stops the ranks as a signal does (a remote launcher whose
	// ssh connection closed).
	Stop <-chan struct{}

	// Timeout, HeartbeatInterval, HeartbeatTimeout: the store's (train/dist).
	Timeout, HeartbeatInterval, HeartbeatTimeout time.Duration
	// StopGrace is how long ranks stopped after a failure get before SIGKILL (0: 10s).
	StopGrace time.Duration
	Logger    *slog.Logger

	// testEvents, set by tests, stands between the store's events and the launcher
	// (to hold an abort back, as a loaded machine may).
	testEvents func(<-chan dist.Event) <-chan dist.Event
	// testStoreWrite, set by tests, runs before each of this launcher's writes to
	// the store (to hold one, as a stalled store does).
	testStoreWrite func()
}

// ErrInterrupted is returned when a signal (or Stop) ended the run.
var ErrInterrupted = errors.New("launch: interrupted")

func (c *Config) defaults() error {
	if c.NNodes == 0 {
		c.NNodes = 1
	}
	switch {
	case c.NProcPerNode < 1:
		return fmt.Errorf("launch: --nproc-per-node %d: want >= 1", c.NProcPerNode)
	case c.NNodes < 1:
		return fmt.Errorf("launch: --nnodes %d: want >= 1", c.NNodes)
	case c.NodeRank < 0 || c.NodeRank >= c.NNodes:
		return fmt.Errorf("launch: --node-rank %d is not in [0,%d)", c.NodeRank, c.NNodes)
	case c.MaxRestarts < 0:
		return fmt.Errorf("launch: --max-restarts %d: want >= 0", c.MaxRestarts)
	case c.MasterPort < 1 || c.MasterPort > 65535:
		return fmt.Errorf("launch: --master-port %d: want a port in [1,65535]", c.MasterPort)
	case c.Program == "":
		return errors.New("launch: no program to run")
	}
	if c.MasterAddr == "" {
		if c.NNodes > 1 {
			return errors.New("launch: several nodes need --master-addr (node 0's address)")
		}
		c.MasterAddr = "127.0.0.1"
	}
	if c.Token == "" {
		if c.NNodes > 1 {
			return fmt.Errorf("launch: several nodes need the same job token on every node: export %s (e.g. $(openssl rand -hex 16)) before starting each node's launcher, or use --hostfile", dist.EnvToken)
		}
		c.Token = dist.NewToken()
	}
	if c.Env == nil {
		c.Env = os.Environ()
	}
	if c.Stdout == nil {
		c.Stdout = io.Discard
	}
	if c.Stderr == nil {
		c.Stderr = io.Discard
	}
	if c.StopGrace <= 0 {
		c.StopGrace = 10 * time.Second
	}
	if c.Timeout <= 0 {
		c.Timeout = dist.DefaultTimeout
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return nil
}

// World is the number of ranks of the job.
func (c *Config) World() int { return max(c.NNodes, 1) * c.NProcPerNode }

// Run launches this node's ranks and supervises them until they all finish (nil),
// the job fails for good, or a signal stops it (ErrInterrupted).
func Run(ctx context.Context, cfg Config) error {
	if err := checkSystem(); err != nil {
		return err
	}
	if err := cfg.defaults(); err != nil {
		return err
	}
	log := cfg.Logger.With("node", cfg.NodeRank)
	l := &launcher{cfg: cfg, log: log, sink: lineSink{mu: &sync.Mutex{}, w: cfg.Stderr}, out: lineSink{mu: &sync.Mutex{}, w: cfg.Stdout}}
	l.spawn = startSpawner()
	defer close(l.spawn)
	storeAddr := net.JoinHostPort(cfg.MasterAddr, strconv.Itoa(cfg.MasterPort))
	var events <-chan dist.Event
	if cfg.NNodes > 1 {
		if err := dist.CheckMasterAddr(ctx, cfg.MasterAddr); err != nil {
			return err
		}
	}
	if cfg.World() > 1 {
		if cfg.NodeRank == 0 {
			ln, err := dist.Listen(cfg.MasterAddr, cfg.MasterPort, log)
			if err != nil {
				return err
			}
			srv, err := dist.NewServer(ln, dist.ServerConfig{Token: cfg.Token, World: cfg.World(), HeartbeatTimeout: cfg.HeartbeatTimeout,
				Timeout: cfg.Timeout, Host: "the launcher of node 0", Logger: log})
			if err != nil {
				ln.Close()
				return err
			}
			defer srv.Close()
			l.srv = srv
			events = srv.Subscribe()
			log.Info("rendezvous store", "addr", ln.Addr().String(), "world", cfg.World())
		} else {
			// Node 0's launcher may start later, or never (a wrong --master-addr):
			// a signal ends the wait, which can last --dist-timeout.
			dctx, signalled := l.untilSignal(ctx)
			agent, err := dist.DialAgent(dctx, storeAddr, dist.AgentOptions{Token: cfg.Token, Node: cfg.NodeRank, Timeout: cfg.Timeout,
				HeartbeatInterval: cfg.HeartbeatInterval, HeartbeatTimeout: cfg.HeartbeatTimeout, Logger: log})
			if signalled() {
				if agent != nil {
					agent.Close()
				}
				log.Warn("interrupted while waiting for the launcher of node 0")
				return ErrInterrupted
			}
			if err != nil {
				return err
			}
			defer agent.Close()
			l.agent = agent
			events = agent.Events()
		}
		if cfg.testEvents != nil {
			events = cfg.testEvents(events)
		}
	}
	// The words to the store go out before the store's end (node 0) or this
	// launcher's connection's (the others), deferred above: this runs first.
	l.writes = newStoreWrites(cfg.testStoreWrite)
	defer l.writes.close()
	for restarts := 0; ; restarts++ {
		out := l.attempt(ctx, restarts, events)
		if reason := cmp.Or(out.fatal, out.failure); out.interrupted && reason != "" {
			// A rank failed (or the job ended) first, and a signal came while the
			// others stopped: the failure is what to say, with no restart.
			if l.srv != nil {
				l.waitIdle()
			}
			return fmt.Errorf("launch: %s (and a signal came while the other ranks stopped)", reason)
		}
		switch {
		case out.interrupted:
			if l.srv != nil {
				// The other nodes' ranks stop after the same step and say goodbye
				// to the store: keep it up for them (a signal ends the wait).
				l.waitIdle()
			}
			return ErrInterrupted
		case out.fatal != "":
			return fmt.Errorf("launch: %s", out.fatal)
		case out.failure == "":
			if l.srv != nil {
				// The other nodes' ranks may still be saying goodbye to the store.
				l.waitIdle()
			}
			return nil
		}
		if restarts >= cfg.MaxRestarts {
			reason := out.failure
			if cfg.MaxRestarts > 0 {
				reason = fmt.Sprintf("%s (no restarts left after %d)", out.failure, cfg.MaxRestarts)
			} else if out.killed || out.rerun {
				reason += "; to go on, rerun the same command (it continues from the newest checkpoint), or pass --max-restarts K to restart the ranks automatically"
			}
			l.giveUp(reason)
			return fmt.Errorf("launch: %s", reason)
		}
		log.Warn("restarting the group from the newest checkpoint", "restart", restarts+1, "max_restarts", cfg.MaxRestarts, "after", out.failure)
	}
}

type launcher struct {
	cfg   Config
	log   *slog.Logger
	sink  lineSink // stderr
	out   lineSink // stdout
	srv   *dist.Server
	agent *dist.Agent
	spawn chan spawnReq
	sigs  int // signals received so far (a second one kills)
	// writes sends reportExit's and giveUp's words to the store, in order.
	writes *storeWrites
}

// untilSignal returns a context that is cancelled when a signal arrives on
// l.cfg.Signals or l.cfg.Stop closes (outside attempt, which reads them itself), and a
// function that ends the watch and reports whether one did; it must be called before
// anything else reads the signals.
func (l *launcher) untilSignal(parent context.Context) (context.Context, func() bool) {
	ctx, cancel := context.WithCancel(parent)
	done, exited := make(chan struct{}), make(chan struct{})
	signalled := false
	go func() {
		defer close(exited)
		select {
		case sig := <-l.cfg.Signals:
			l.sigs++
			l.log.Warn("signal: stopping", "signal", sig)
			signalled = true
			cancel()
		case <-l.cfg.Stop:
			l.log.Warn("stopping: the launcher that started this one went away")
			signalled = true
			cancel()
		case <-done:
		}
	}()
	return ctx, func() bool {
		close(done)
		<-exited
		cancel()
		return signalled
	}
}

// waitIdle keeps node 0's store up for at most a minute while the other nodes' ranks
// say goodbye to it; a signal ends the wait.
func (l *launcher) waitIdle() {
	ctx, signalled := l.untilSignal(context.Background())
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	l.srv.WaitIdle(ctx)
	cancel()
	signalled()
}

// giveUp tells the other nodes' launchers, through the store, that this one gave the
// job up for reason; they say it as their failure.
func (l *launcher) giveUp(reason string) {
	reason = giveUpReason(l.cfg.NodeRank, reason)
	switch srv, agent := l.srv, l.agent; {
	case srv != nil:
		l.writes.push(func() { srv.GiveUp(reason) })
	case agent != nil:
		l.writes.push(func() { agent.GiveUp(reason) })
	}
}

// giveUpReason is reason as the other nodes' launchers say it: after "node N: "
// unless it names node N already, as a rank's exit this launcher saw does ("rank 3 on
// node 1 exited ..."; they said "node 1: rank 3 on node 1 exited ...").
func giveUpReason(node int, reason string) string {
	if namesNode(reason, node) {
		return reason
	}
	return fmt.Sprintf("node %d: %s", node, reason)
}

// namesNode reports whether reason says " on node N" of node (not of node 10 for 1).
func namesNode(reason string, node int) bool {
	at := fmt.Sprintf(" on node %d", node)
	for rest := reason; ; {
		i := strings.Index(rest, at)
		if i < 0 {
			return false
		}
		rest = rest[i+len(at):]
		if rest == "" || rest[0] < '0' || rest[0] > '9' {
			return true
		}
	}
}

// outcome is how an attempt ended.
type outcome struct {
	failure     string // the first failure ("" none)
	killed      bool   // the failure is a rank of this node's SIGKILLed from outside (rerun: the next step)
	rerun       bool   // the store's failure is one a restart can cure (dist.Event.Rerun): rerun too
	fatal       string // the job is over (given up elsewhere, store lost)
	interrupted bool
}

type worker struct {
	rank int
	cmd  *exec.Cmd
	// exited is set by attempt's loop when the rank's exit arrives (cmd.ProcessState
	// is written by the goroutine that waits for it: not for the loop to read).
	exited bool
	// stopped is set once this launcher has sent the rank a stop signal: a crash
	// of it afterwards may be its handling of that signal.
	stopped bool
}

type exit struct {
	rank int
	err  error
	last string // the last line of its stderr
}

// attempt starts this node's ranks once and waits for them.
func (l *launcher) attempt(ctx context.Context, restart int, events <-chan dist.Event) outcome {
	cfg := l.cfg
	exits := make(chan exit, cfg.NProcPerNode)
	var workers []*worker
	var out outcome
	stopping := false
	var killTimer <-chan time.Time
	// spare is a rank that reported its own failure to the store and is exiting with
	// it: no stop signal for it (one would race its last line, its own error, with
	// "interrupted"), only the SIGKILL after the grace period should it not exit.
	spare := -1
	sentKill := false // this launcher has SIGKILLed its ranks
	// blamed is a rank of this node's that the store blamed for a failure a restart
	// can cure (it disconnected, sent no heartbeat...) and whose exit has not come:
	// should its exit come within exitGrace, its own status says what happened and
	// whether a rerun is the next step (a panic's exit comes after the store's
	// "disconnected", behind the rank's output). It gets no stop signal meanwhile,
	// which would make its exit the launcher's doing.
	blamed := -1
	blamedLate := false // blamed by an abort that came after this node's ranks were stopped
	var blameTimer <-chan time.Time
	// abortGen and abortRank are the generation and rank of the store's abort that
	// this launcher took as the failure. Where it blamed a rank of another node for a
	// failure a restart can cure, that node's launcher says how the rank ended
	// (dist.EventExit): awaiting holds the attempt open for its word, for at most
	// remoteExitGrace (its launcher may be gone too).
	abortGen, abortRank := -1, -1
	// reporter is the rank of this node's whose exit with status 1 (failedExit) is
	// the failure, taken before any abort: most often a rank that read another's
	// failure (its "rank 3 disconnected", before this launcher heard the store's
	// abort). A later exit of a rank of this node's that crashed on its own replaces
	// it (ownCrash), unless an abort of the generation named another rank
	// (storeRank): its own error, which another rank's crash followed.
	reporter, storeRank := -1, -1
	// storeSaid is set once an abort of the generation came. After a reporter's
	// exit, abortWait holds the attempt open for it (it is on its way: the
	// reporter read it), for at most exitGrace, should this node's ranks all have
	// exited first.
	storeSaid := false
	var abortWait <-chan time.Time
	gen := -1 // the generation of the group this attempt's ranks joined (the store's start)
	// crashed are exits of this node's ranks that crashed (ownCrash) after this
	// launcher sent them its stop signal, while a reporter's failure stood and the
	// store had not said which rank failed: a crash in handling the signal, or the
	// rank the reporter read of, whose exit came behind its output. The store's
	// abort says which: one naming a crashed rank makes its crash the failure (as
	// does no abort within abortWait); one naming another rank is the failure.
	var crashed []exit
	// fail makes a rank's exit the failure: the rerun hint only for a kill from
	// outside (out.killed), which a restart can cure, unlike a crash.
	fail := func(ex exit) {
		out.failure, out.rerun = l.describeExit(ex), false
		out.killed = !sentKill && killedBySignal(ex.err, syscall.SIGKILL)
	}
	// takeOver makes a crash the failure in place of the reporter's.
	takeOver := func(ex exit) {
		reporter = -1
		fail(ex)
		l.log.Error("a rank crashed on its own; it is the failure the other rank reported", "rank", ex.rank, "failure", out.failure)
		l.reportExit(gen, ex.rank, out.failure, out.killed)
	}
	// takeOverCrashed makes the first crash in crashed the failure where the store's
	// abort did not come (as it was before a crash after a stop signal waited for it).
	takeOverCrashed := func() {
		if reporter >= 0 && !storeSaid && len(crashed) > 0 {
			takeOver(crashed[0])
		}
	}
	crashedRank := func(rank int) (exit, bool) {
		for _, ex := range crashed {
			if ex.rank == rank {
				return ex, true
			}
		}
		return exit{}, false
	}
	// pending are reports (reportExit) of a rank's own end (a panic, a kill) that
	// came before this launcher heard its generation start, whose number the store
	// needs: the rank may have crashed right after the start, which is on its way
	// here. startWait holds the attempt open for the start, for at most exitGrace;
	// the reports go out with it.
	type report struct {
		rank   int
		reason string
		rerun  bool
	}
	var pending []report
	var startWait <-chan time.Time
	awaiting := false
	var awaitTimer <-chan time.Time
	endAwait := func() { awaiting, awaitTimer, abortWait, startWait = false, nil, nil, nil }
	// await holds the attempt open for the word of the launcher of rank (of another
	// node), saying so: the wait is a pause of up to remoteExitGrace.
	await := func(rank int) {
		awaiting, awaitTimer = true, time.After(remoteExitGrace)
		l.log.Warn("waiting for the launcher of the rank the store named to say how it ended (its own crash, or a hang or kill a rerun can cure)",
			"rank", rank, "node", rank/cfg.NProcPerNode, "at_most", remoteExitGrace)
	}
	signal := func(w *worker, sig syscall.Signal) {
		w.cmd.Process.Signal(sig)
		resume(w.cmd.Process) // a stopped (hung) rank gets it too
	}
	stop := func(sig syscall.Signal, grace time.Duration) {
		if sig == syscall.SIGKILL {
			sentKill = true
		}
		for _, w := range workers {
			if !w.exited {
				if sig == syscall.SIGKILL {
					kill(w.cmd) // the rank's process group
					continue
				}
				if w.rank == spare || w.rank == blamed {
					continue
				}
				signal(w, sig)
				w.stopped = true
			}
		}
		if !stopping && grace > 0 {
			killTimer = time.After(grace)
		}
		stopping = true
	}
	for local := range cfg.NProcPerNode {
		rank := cfg.NodeRank*cfg.NProcPerNode + local
		w, err := l.start(rank, local, restart, exits)
		if err != nil {
			out.failure = fmt.Sprintf("rank %d%s did not start: %v", rank, l.onNode(), err)
			stop(syscall.SIGKILL, 0)
			break
		}
		workers = append(workers, w)
	}
	running := len(workers)
	ctxDone := ctx.Done()
	stopCh := l.cfg.Stop
	for running > 0 || awaiting || abortWait != nil && !storeSaid || startWait != nil {
		select {
		case ex := <-exits:
			running--
			for _, w := range workers {
				if w.rank == ex.rank {
					w.exited = true
				}
			}
			if ex.rank == blamed {
				blamed, blameTimer = -1, nil
				own := ex.err != nil && !sentKill && !interruptedExit(ex.err) && !failedExit(ex.err)
				if blamedLate {
					own = ownCrash(ex, sentKill) // it got the stop signal: not a SIGTERM's death
				}
				if own {
					// Its own end, which the store saw as a disconnection: a panic
					// (no rerun cures it), or a kill from outside (out.killed). Not
					// an exit on an error (failedExit): the group's failure, read
					// once it resumed or lost the store, of a rank hung or cut off.
					fail(ex)
					l.log.Error("the rank the store named has exited", "rank", ex.rank, "failure", out.failure)
					l.reportExit(abortGen, ex.rank, out.failure, out.killed)
				} else {
					l.reportExit(abortGen, ex.rank, "", true) // the store's word stands
				}
			}
			if stopping && reporter >= 0 && ex.rank != reporter && (!storeSaid || storeRank == ex.rank) && ownCrash(ex, sentKill) {
				// The rank that exited with status 1 read this rank's failure (the
				// store's abort came later, or was ignored as this node was already
				// stopping): its own end is the failure, on every node. Unless this
				// launcher had sent it the stop signal and the store has not said:
				// it may have crashed handling it, and the store's abort says which.
				w := l.worker(workers, ex.rank)
				if w != nil && w.stopped && !storeSaid {
					crashed = append(crashed, ex)
				} else {
					takeOver(ex)
				}
			}
			if ex.err != nil && !stopping && interruptedExit(ex.err) {
				// Stopped with the others on an interrupt another node's launcher
				// forwarded: the job was interrupted, nothing failed.
				out.interrupted = true
				l.log.Warn("a rank stopped on an interrupt (a signal to it, or to another node's launcher); stopping this node's ranks", "rank", ex.rank)
				stop(syscall.SIGTERM, cfg.StopGrace)
				continue
			}
			if ex.err != nil && !stopping {
				fail(ex)
				if l.srv != nil {
					out.failure = l.srv.Explain(out.failure) // this launcher was stopped: the cause
				}
				l.log.Error("a rank failed; stopping the others", "rank", ex.rank, "failure", out.failure)
				// The store may blame it for a disconnection meanwhile: the other
				// nodes' launchers hear its own end.
				if gen < 0 && !failedExit(ex.err) && events != nil && cfg.NNodes > 1 {
					pending, startWait = append(pending, report{ex.rank, out.failure, out.killed}), time.After(exitGrace)
				} else {
					l.reportExit(gen, ex.rank, out.failure, out.killed)
				}
				if failedExit(ex.err) && gen >= 0 && events != nil {
					reporter, abortWait = ex.rank, time.After(exitGrace)
				}
				stop(syscall.SIGTERM, cfg.StopGrace)
			}
		case ev, ok := <-events:
			if !ok {
				events = nil
				endAwait()
				continue
			}
			switch ev.Kind {
			case dist.EventStart:
				if !ownRound(ev, workers, restart) {
					// An earlier round's start (its round ended before this launcher
					// heard it): it and its abort are not this round's.
					l.log.Debug("the start of an earlier round's generation; ignored", "gen", ev.Gen, "restart", restart)
					continue
				}
				gen = ev.Gen
				for _, r := range pending {
					l.reportExit(gen, r.rank, r.reason, r.rerun)
				}
				pending, startWait = nil, nil
			case dist.EventAbort:
				if ev.Gen == gen && !storeSaid {
					storeSaid, storeRank = true, ev.Rank
				}
				if ev.Gen == gen && !stopping {
					out.failure, out.rerun, out.killed = ev.Reason, ev.Rerun, false
					abortGen, abortRank = ev.Gen, ev.Rank
					if ev.Exiting {
						spare = ev.Rank
					}
					w := l.worker(workers, ev.Rank)
					if ev.Rerun && w != nil && !w.exited {
						blamed, blameTimer = ev.Rank, time.After(exitGrace)
					}
					if ev.Rerun && !ev.Exiting && ev.Rank >= 0 && w == nil && cfg.NNodes > 1 {
						await(ev.Rank)
					}
					l.log.Error("the group failed; stopping this node's ranks", "reason", ev.Reason)
					stop(syscall.SIGTERM, cfg.StopGrace)
				} else if ex, ok := crashedRank(ev.Rank); ok && ev.Gen == gen && reporter >= 0 {
					// The rank the reporter read of crashed (its exit came after this
					// launcher's stop signal, behind its output).
					takeOver(ex)
				} else if ev.Gen == gen && reporter >= 0 && ev.Rank >= 0 && ev.Rank != reporter {
					// The rank whose exit with status 1 was taken for the failure read
					// this one: the store's word is the failure, and, as had it come
					// first, the named rank's own end where it crashed (this node's
					// ranks are stopping already).
					reporter = -1
					out.failure, out.rerun, out.killed = ev.Reason, ev.Rerun, false
					abortGen, abortRank = ev.Gen, ev.Rank
					l.log.Error("the group failed: the rank that exited read this failure", "reason", ev.Reason)
					w := l.worker(workers, ev.Rank)
					switch {
					case w != nil && !w.exited && ev.Rerun:
						blamed, blameTimer, blamedLate = ev.Rank, time.After(exitGrace), true
					case w != nil && ev.Rerun:
						l.reportExit(abortGen, ev.Rank, "", true) // not its own crash (reporter's block): the store's word stands
					case w == nil && ev.Rerun && !ev.Exiting && cfg.NNodes > 1:
						await(ev.Rank)
					}
				}
			case dist.EventExit:
				if ev.Gen == abortGen && ev.Rank == abortRank && l.worker(workers, ev.Rank) == nil {
					if ev.Reason != "" && out.fatal == "" {
						out.failure, out.rerun, out.killed = ev.Reason, ev.Rerun, false
						l.log.Error("the rank the store named has exited", "rank", ev.Rank, "failure", ev.Reason)
					}
					endAwait()
				}
			case dist.EventFatal, dist.EventLost:
				endAwait() // the job is over: what its end says is what to say
				if out.fatal == "" {
					out.fatal = ev.Reason
					l.log.Error("the job is over", "reason", ev.Reason)
					stop(syscall.SIGTERM, cfg.StopGrace)
				}
			}
		case sig := <-l.cfg.Signals:
			endAwait()
			l.interrupt(&out, sig.(syscall.Signal), stop)
		case <-ctxDone:
			ctxDone = nil
			endAwait()
			l.interrupt(&out, syscall.SIGTERM, stop)
		case <-stopCh:
			stopCh = nil
			endAwait()
			l.log.Warn("stopping: the launcher that started this one went away")
			out.interrupted = true
			// An interrupt of the job (the hostfile launcher closes its ssh sessions
			// on Ctrl-C): the ranks save a checkpoint together, which takes as long
			// as it takes, so no kill timer, as for a signal forwarded here (a save
			// of a large model cut by SIGKILL after StopGrace lost the checkpoint).
			stop(syscall.SIGTERM, 0)
		case <-blameTimer:
			// The rank the store blamed has not exited: hung or stopped, not
			// crashed. It is stopped with the others, and a rerun stays the hint.
			blameTimer = nil
			if w := l.worker(workers, blamed); w != nil && !w.exited && !sentKill {
				signal(w, syscall.SIGTERM)
				w.stopped = true
			}
			l.reportExit(abortGen, blamed, "", true) // the store's word stands
			blamed = -1
		case <-startWait:
			pending, startWait = nil, nil // no start came: the rank never ran in a generation
		case <-abortWait:
			abortWait = nil // the store's abort did not come: the rank's exit stands
			takeOverCrashed()
		case <-awaitTimer:
			l.log.Warn("no word from the launcher of the rank the store named on how it ended; the store's word stands", "rank", abortRank, "node", abortRank/cfg.NProcPerNode)
			endAwait()
		case <-killTimer:
			l.log.Warn("ranks still running after the grace period; killing them")
			stop(syscall.SIGKILL, 0)
		}
	}
	takeOverCrashed() // no word from the store (its events ended, a signal came)
	return out
}

// ownRound reports whether a start is of the generation this attempt's ranks
// (started in round restart) joined, not of an earlier round's: each rank's hello
// carries the restart count the launcher gave it (dist.Event.Rounds).
func ownRound(ev dist.Event, workers []*worker, restart int) bool {
	for _, w := range workers {
		if w.rank < len(ev.Rounds) && ev.Rounds[w.rank] != restart {
			return false
		}
	}
	return true
}

// exitGrace is how long after the store blamed a rank of this node's for a failure
// a restart can cure the launcher waits for that rank's exit, whose status tells its
// own crash from a hang or a kill: longer than its output takes to end
// (pipeDrainWait) once it has exited.
var exitGrace = pipeDrainWait + time.Second

// remoteExitGrace is how long a launcher waits, after the store blamed a rank of
// another node for a failure a restart can cure, for that node's launcher's word on
// how the rank ended (it waits up to exitGrace for the rank's exit, then reports):
// past it (that launcher is gone too), the store's word stands.
var remoteExitGrace = exitGrace + 2*time.Second

// reportExit tells the other nodes' launchers, through the store, how a rank of this
// node ended in generation gen (reason "": it had not exited within exitGrace; the
// store's word stands). Only with several nodes: a single node's launcher saw it.
func (l *launcher) reportExit(gen, rank int, reason string, rerun bool) {
	if l.cfg.NNodes < 2 || gen < 0 {
		return
	}
	switch srv, agent := l.srv, l.agent; {
	case srv != nil:
		l.writes.push(func() { srv.ReportExit(gen, rank, reason, rerun) })
	case agent != nil:
		l.writes.push(func() { agent.ReportExit(gen, rank, reason, rerun) })
	}
}

// storeWrites sends a launcher's words to the store (reportExit, giveUp) one at a
// time, in the order given, on a goroutine of its own: a write to a store that
// reads nothing (stopped, hung, its host unreachable) blocks for up to the write
// timeout, and attempt's loop, which made it, heard no signal, no other rank's exit
// and no event of the store's meanwhile.
type storeWrites struct {
	mu     sync.Mutex
	queue  []func()
	closed bool
	more   chan struct{} // a word was queued (or close called)
	done   chan struct{} // closed once the goroutine has sent every word and ended
	before func()        // (tests) runs before each write
}

func newStoreWrites(before func()) *storeWrites {
	w := &storeWrites{more: make(chan struct{}, 1), done: make(chan struct{}), before: before}
	go w.run()
	return w
}

// push queues a write; it never blocks.
func (w *storeWrites) push(write func()) {
	w.mu.Lock()
	w.queue = append(w.queue, write)
	w.mu.Unlock()
	select {
	case w.more <- struct{}{}:
	default:
	}
}

// close waits for the writes queued so far to be sent (each is bounded by the
// store connection's write timeout, and one that fails marks the store lost).
func (w *storeWrites) close() {
	w.mu.Lock()
	w.closed = true
	w.mu.Unlock()
	select {
	case w.more <- struct{}{}:
	default:
	}
	<-w.done
}

func (w *storeWrites) run() {
	defer close(w.done)
	for {
		w.mu.Lock()
		queue, closed := w.queue, w.closed
		w.queue = nil
		w.mu.Unlock()
		for _, write := range queue {
			if w.before != nil {
				w.before()
			}
			write()
		}
		if len(queue) == 0 {
			if closed {
				return
			}
			<-w.more
		}
	}
}

// describeExit is describeExit naming this node with several ("rank 3 on node 1
// exited ..."), where the other nodes' launchers say it too.
func (l *launcher) describeExit(ex exit) string {
	return describeExit(ex, l.onNode())
}

// onNode is " on node N" of this node where the job has several, which follows a
// rank in what this launcher says of it, else "".
func (l *launcher) onNode() string {
	if l.cfg.NNodes > 1 {
		return fmt.Sprintf(" on node %d", l.cfg.NodeRank)
	}
	return ""
}

// worker is this node's worker of rank, or nil.
func (l *launcher) worker(workers []*worker, rank int) *worker {
	for _, w := range workers {
		if w.rank == rank {
			return w
		}
	}
	return nil
}

// interrupt forwards a signal: the first as it is (the ranks checkpoint and exit), a
// SIGHUP or SIGQUIT as SIGTERM; a later SIGINT (a second Ctrl-C) as SIGKILL. A
// repeated SIGTERM, SIGHUP or SIGQUIT is forwarded again and kills nothing: schedulers
// repeat SIGTERM, and a save cut by SIGKILL loses the checkpoint.
func (l *launcher) interrupt(out *outcome, sig syscall.Signal, stop func(syscall.Signal, time.Duration)) {
	out.interrupted = true
	l.sigs++
	if l.sigs > 1 && sig == syscall.SIGINT {
		l.log.Warn("second interrupt: killing the ranks")
		stop(syscall.SIGKILL, 0)
		return
	}
	if l.sigs > 1 {
		l.log.Warn("signal again: the ranks are already stopping (a second Ctrl-C kills them)", "signal", sig)
		return
	}
	l.log.Warn("signal: forwarding it to the ranks (each finishes its step and exits, saving a checkpoint if it took a step; a second Ctrl-C kills them)", "signal", sig)
	switch sig {
	case syscall.SIGHUP:
		sig = syscall.SIGTERM // the ranks' session is their own: no hangup of theirs
	case syscall.SIGQUIT:
		// torchrun's meaning, SIGTERM's, in a form no rank can take for another: a
		// rank not yet watching for it (still starting) would dump its stacks.
		sig = syscall.SIGTERM
	}
	stop(sig, 0)
}

// interruptedExit reports whether a rank exited with dist.ExitInterrupted: it stopped
// on an interrupt, its own or another rank's.
func interruptedExit(err error) bool {
	var ee *exec.ExitError
	return errors.As(err, &ee) && ee.ExitCode() == dist.ExitInterrupted
}

// describeExit says how a rank ended; where follows its rank (" on node 1").
func describeExit(ex exit, where string) string {
	var msg string
	var ee *exec.ExitError
	killed := false
	if errors.As(ex.err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			killed = true
			msg = fmt.Sprintf("rank %d%s was killed by signal %d (%s)", ex.rank, where, ws.Signal(), ws.Signal())
			if name, ok := crashSignals[ws.Signal()]; ok {
				// Its own crash (a C library's abort(), a bad memory access in C
				// code): its last line most often says why (an assertion, NCCL's
				// error, the Go runtime's "SIGABRT: abort" under GOTRACEBACK=crash).
				killed = false
				msg = fmt.Sprintf("rank %d%s was killed by signal %d (%s)", ex.rank, where, ws.Signal(), name)
			}
			if ws.Signal() == syscall.SIGKILL {
				// Not this launcher's (describeExit is for a rank that failed first).
				msg += " from outside the launcher: the kernel's OOM killer does this when memory runs out (see `dmesg | grep -i oom`; lower the batch size or the ranks per node), or a user or scheduler killed it"
			}
		} else {
			msg = fmt.Sprintf("rank %d%s exited with status %d", ex.rank, where, ee.ExitCode())
		}
	} else {
		msg = fmt.Sprintf("rank %d%s: %v", ex.rank, where, ex.err)
	}
	switch {
	case ex.last == "":
	case killed:
		// Its last line is no reason: it was cut off wherever it was (a log line).
		msg += " (its last line: " + ex.last + ")"
	default:
		msg += ": " + ex.last // its own last words, e.g. "train: ..."
	}
	return msg
}

// failedExit reports whether a rank exited with status 1, a failure it returned: a
// rank's own error goes to the store first (an abort naming it as exiting, never
// blamed); after a blame, one that exits so read the group's failure (it resumed
// after a hang, or lost the store), which a restart can cure. (A Go panic exits 2.)
func failedExit(err error) bool {
	var ee *exec.ExitError
	return errors.As(err, &ee) && ee.ExitCode() == 1
}

// ownCrash reports whether a rank's exit is its own crash, not the group's failure
// it read nor a stop of this launcher's (sentKill: it SIGKILLed its ranks): a Go
// panic or runtime fatal error (status 2 after a crash report, goCrashLine), a
// death by a crash signal (crashSignals: a C library's abort(), e.g. inside CUDA
// or NCCL), or a SIGKILL from outside (the OOM killer). Not a death by SIGTERM,
// SIGINT, SIGHUP or SIGQUIT, which the launcher itself sends on a stop.
func ownCrash(ex exit, sentKill bool) bool {
	var ee *exec.ExitError
	if ex.err == nil || sentKill || !errors.As(ex.err, &ee) {
		return false
	}
	if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		if _, crash := crashSignals[ws.Signal()]; crash {
			return true
		}
	}
	return ee.ExitCode() == 2 && goCrashLine(ex.last) || killedBySignal(ex.err, syscall.SIGKILL)
}

// crashSignals are the signals a process dies of when it crashes on its own (no
// launcher sends them), by their names.
var crashSignals = map[syscall.Signal]string{
	syscall.SIGABRT: "SIGABRT",
	syscall.SIGSEGV: "SIGSEGV",
	syscall.SIGBUS:  "SIGBUS",
	syscall.SIGILL:  "SIGILL",
	syscall.SIGFPE:  "SIGFPE",
}

// killedBySignal reports whether a rank's Wait error is its death by signal sig.
func killedBySignal(err error, sig syscall.Signal) bool {
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		return false
	}
	ws, ok := ee.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled() && ws.Signal() == sig
}

// start starts one rank with torchrun's environment.
func (l *launcher) start(rank, local, restart int, exits chan<- exit) (*worker, error) {
	cfg := l.cfg
	cmd := exec.Command(cfg.Program, cfg.Args...)
	cmd.Env = append(append([]string(nil), cfg.Env...),
		"RANK="+strconv.Itoa(rank),
		"WORLD_SIZE="+strconv.Itoa(cfg.World()),
		"LOCAL_RANK="+strconv.Itoa(local),
		"LOCAL_WORLD_SIZE="+strconv.Itoa(cfg.NProcPerNode),
		"GROUP_RANK="+strconv.Itoa(cfg.NodeRank),
		"GROUP_WORLD_SIZE="+strconv.Itoa(cfg.NNodes),
		"MASTER_ADDR="+cfg.MasterAddr,
		"MASTER_PORT="+strconv.Itoa(cfg.MasterPort),
		"TORCHELASTIC_RESTART_COUNT="+strconv.Itoa(restart),
		"TORCHELASTIC_MAX_RESTARTS="+strconv.Itoa(cfg.MaxRestarts),
		dist.EnvToken+"="+cfg.Token,
		dist.EnvLauncherStore+"=1",
	)
	pipes, err := newOutputPipes(cmd)
	if err != nil {
		return nil, err
	}
	detach(cmd)
	err = l.startCmd(cmd)
	pipes.started(err == nil)
	if err != nil {
		return nil, err
	}
	l.log.Info("rank started", "rank", rank, "local_rank", local, "pid", cmd.Process.Pid, "restart", restart)
	prefix := fmt.Sprintf("[rank %d] ", rank)
	if rank == 0 {
		pipes.copy(l.out, "", l.sink, prefix) // rank 0's stdout is the job's
	} else {
		pipes.copy(l.sink, prefix, l.sink, prefix)
	}
	go func() {
		last, err := pipes.wait(cmd)
		exits <- exit{rank: rank, err: err, last: last}
	}()
	return &worker{rank: rank, cmd: cmd}, nil
}

// spawnReq asks the spawner goroutine to start a process.
type spawnReq struct {
	cmd  *exec.Cmd
	done chan error
}

// startSpawner starts the goroutine that starts every rank. It keeps its OS thread
// for good: Linux sends a child's parent-death signal when the thread that forked
// it exits, not the process.
func startSpawner() chan spawnReq {
	ch := make(chan spawnReq)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with the process
		for req := range ch {
			req.done <- req.cmd.Start()
		}
	}()
	return ch
}

func (l *launcher) startCmd(cmd *exec.Cmd) error {
	done := make(chan error, 1)
	l.spawn <- spawnReq{cmd: cmd, done: done}
	return <-done
}

func newToken() string { return dist.NewToken() }
