package pipelines

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"gptkit/internal/miniotest"
	"gptkit/internal/testfiles"
	"gptkit/storage"
	"gptkit/tokenize"
)

// The resume helper: when GPTKIT_RESUME_RUN names a directory, this test binary runs the
// resume tests' job (resumeJob) on the corpus in GPTKIT_RESUME_CORPUS into it and
// SIGKILLs itself at the n-th event ev of GPTKIT_RESUME_KILL="ev:n" (events: "doc",
// "commit", "journal", "manifest"; see testHooks). It exits 0 only if the run finished
// without reaching that event.
func resumeHelper(out string) {
	ev, nstr, _ := strings.Cut(os.Getenv("GPTKIT_RESUME_KILL"), ":")
	n, _ := strconv.Atoi(nstr)
	workers, _ := strconv.Atoi(os.Getenv("GPTKIT_RESUME_WORKERS"))
	run := resumeJob(&testing.T{}, os.Getenv("GPTKIT_RESUME_CORPUS"), out, gpt2(&testing.T{}))
	run.Workers = workers
	seen := 0
	run.hooks.event = func(e string) {
		if e == ev {
			if seen++; seen == n {
				syscall.Kill(os.Getpid(), syscall.SIGKILL)
			}
		}
	}
	if _, _, err := run.Run(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, "resume helper:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// resumeJob is the job every resume test runs: the split corpus in corpusDir (made by
// splitCorpus, which must have run there), 8 KiB shards, resumable, a fixed clock.
func resumeJob(t testing.TB, corpusDir, out string, tok *tokenize.Tokenizer) *TokenizeRun {
	in := func(name string) []string { return []string{filepath.Join(corpusDir, name)} }
	run := &TokenizeRun{
		Splits: []SplitInputs{
			{Split: "train", Inputs: append(in("a.jsonl"), in("b.jsonl.gz")...)},
			{Split: "val", Inputs: in("c.jsonl")},
			{Split: "test", Inputs: in("d.txt")},
		},
		Store: dirStore(t, out), Name: "sh", Tokenizer: tok, AppendEOD: true, ShardBytes: 8 << 10,
		Resume: true, Command: "prep sh", Workers: 3,
	}
	run.hooks.now = fixedClock
	return run
}

// killAt runs the resume helper into out and checks that it killed itself at ev:n.
func killAt(t *testing.T, corpusDir, out, ev string, n, workers int) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "GPTKIT_RESUME_RUN="+out, "GPTKIT_RESUME_CORPUS="+corpusDir,
		fmt.Sprintf("GPTKIT_RESUME_KILL=%s:%d", ev, n), fmt.Sprintf("GPTKIT_RESUME_WORKERS=%d", workers))
	cmd.Stderr = os.Stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("the helper was to kill itself at %s:%d; it ended with %v", ev, n, err)
	}
}

// referenceRun runs the resume job uninterrupted into a new directory, counting the
// events, and returns its files and the counts.
func referenceRun(t *testing.T, corpusDir string, tok *tokenize.Tokenizer) (map[string]string, map[string]int, RunStats) {
	t.Helper()
	out := t.TempDir()
	run := resumeJob(t, corpusDir, out, tok)
	run.Workers = 1
	events := map[string]int{}
	run.hooks.event = func(e string) { events[e]++ }
	_, stats, err := run.Run(context.Background())
	if err != nil || stats.ResumedShards != 0 || stats.Restarted != "" {
		t.Fatalf("reference run: %v %+v", err, stats)
	}
	if _, err := os.Stat(filepath.Join(out, JournalName)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a finished run left its journal: %v", err)
	}
	return snapshot(t, out), events, stats
}

// TestResumeAfterKill kills a resumable run (a separate process, SIGKILL) at many moments:
// before its first shard, mid-shard, right after a shard's commit and before its journal
// entry, after k journaled shards, between splits, after the manifest. Running the same
// job again finishes the dataset, byte-identical to an uninterrupted run (manifest
// included), keeping the journaled shards.
func TestResumeAfterKill(t *testing.T) {
	corpusDir := t.TempDir()
	splitCorpus(t, corpusDir)
	tok := gpt2(t)
	want, events, ref := referenceRun(t, corpusDir, tok)
	commits, journals := events["commit"], events["journal"]
	if commits < 20 || events["doc"] < 400 || events["manifest"] != 1 {
		t.Fatalf("the reference run's events: %v", events)
	}
	type kill struct {
		ev string
		n  int
	}
	points := [][]kill{
		{{"doc", 1}}, {{"doc", 30}}, {{"doc", events["doc"] / 2}}, {{"doc", events["doc"] - 1}},
		{{"commit", 1}}, {{"commit", commits / 2}}, {{"commit", commits}},
		{{"journal", 1}}, {{"journal", 2}}, {{"journal", 3}}, {{"journal", journals / 2}}, {{"journal", journals - 1}}, {{"journal", journals}},
		{{"manifest", 1}},
		{{"journal", 4}, {"doc", 50}, {"journal", 5}}, // killed three times over
	}
	if testing.Short() {
		points = [][]kill{{{"doc", 30}}, {{"commit", commits / 2}}, {{"journal", 3}}, {{"manifest", 1}}, {{"journal", 2}, {"doc", 50}}}
	}
	midShard := 0 // kills that left a half-written shard
	defer func() {
		if midShard < 2 && !t.Failed() {
			t.Errorf("only %d kills hit the middle of a shard", midShard)
		}
	}()
	for _, chain := range points {
		var steps []string
		for _, k := range chain {
			steps = append(steps, fmt.Sprintf("%s%d", k.ev, k.n))
		}
		name := strings.Join(steps, "+")
		t.Run(name, func(t *testing.T) {
			out := t.TempDir()
			for i, k := range chain {
				killAt(t, corpusDir, out, k.ev, k.n, 1+i%3)
			}
			last := chain[len(chain)-1]
			if last.ev == "doc" && hasTempShard(t, out) {
				midShard++
			}
			run := resumeJob(t, corpusDir, out, tok)
			// An hour later: the manifest still says when the job first started.
			run.hooks.now = func() time.Time { return fixedClock().Add(time.Hour) }
			var skippedBytes atomic.Int64 // read again to skip the kept shards' documents
			run.ProgressSkipped = func(n int64) { skippedBytes.Add(n) }
			m, stats, err := run.Run(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			// A split with kept documents read again, to encode the rest, reports the
			// bytes it skips; bytes skipped are a split's with kept documents (whose
			// kept shards may hold all of them: read to the end, nothing to encode).
			reread, kept := false, false
			for _, s := range stats.Splits {
				reread = reread || s.ResumedDocs > 0 && s.RunTextBytes > 0
				kept = kept || s.ResumedDocs > 0
			}
			if reread && skippedBytes.Load() == 0 || !kept && skippedBytes.Load() > 0 {
				t.Errorf("a split read past kept documents: %v, kept documents: %v; bytes reported skipped: %d", reread, kept, skippedBytes.Load())
			}
			if stats.Restarted != "" {
				t.Errorf("restarted: %s", stats.Restarted)
			}
			t.Logf("kept %d shards, %d documents", stats.ResumedShards, stats.ResumedDocs)
			switch {
			case last.ev == "manifest":
				if !stats.AlreadyComplete {
					t.Errorf("killed after the manifest: want already complete, got %+v", stats)
				}
			case last.ev == "journal" && stats.ResumedShards == 0:
				t.Errorf("killed after %d journal saves, yet no shard was kept", last.n)
			}
			if stats.Docs != m.Documents || stats.Tokens != m.Tokens || stats.Shards != len(m.Shards) {
				t.Errorf("stats %+v do not match the manifest", stats)
			}
			if last.ev != "manifest" && stats.ResumedShards > 0 && (stats.RunTextBytes >= stats.TextBytes || stats.RunTokens >= stats.Tokens) {
				// (The summary's speeds divide this run's work only.)
				t.Errorf("kept %d shards, yet this run's work is %d of %d text bytes, %d of %d tokens", stats.ResumedShards, stats.RunTextBytes, stats.TextBytes, stats.RunTokens, stats.Tokens)
			}
			if last.ev != "manifest" {
				for i, s := range stats.Splits {
					r := ref.Splits[i]
					if s.Docs != r.Docs || s.Tokens != r.Tokens || s.Empty != r.Empty || s.BytesIn != r.BytesIn || s.TextBytes != r.TextBytes {
						t.Errorf("split %s: stats %+v, an uninterrupted run's %+v", s.Split, s, r)
					}
				}
			}
			sameFiles(t, name, snapshot(t, out), want)
		})
	}
}

// hasTempShard reports whether a killed run left a shard's temp file in dir.
func hasTempShard(t *testing.T, dir string) bool {
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".sh_") && strings.Contains(e.Name(), ".bin.tmp-") {
			return true
		}
	}
	return false
}

// interruptAfter runs the resume job in-process and cancels it at the n-th "journal"
// event (a save after a shard's commit or a split's end), leaving its journal behind.
func interruptAfter(t *testing.T, run *TokenizeRun, n int) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	seen := 0
	run.hooks.event = func(e string) {
		if e == "journal" {
			if seen++; seen == n {
				cancel()
			}
		}
	}
	if _, _, err := run.Run(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("the interrupted run: %v", err)
	}
	run.hooks.event = nil
}

// TestResumeChangedJob: a journal of another job (other shard size, other tokenizer) is
// not resumed; the run starts over and says why.
func TestResumeChangedJob(t *testing.T) {
	corpusDir := t.TempDir()
	splitCorpus(t, corpusDir)
	tok := gpt2(t)
	for _, tc := range []struct {
		name    string
		change  func(r *TokenizeRun)
		mention string
	}{
		{"shard size", func(r *TokenizeRun) { r.ShardBytes = 16 << 10 }, "shard size"},
		{"tokenizer", func(r *TokenizeRun) {
			r.Tokenizer = tokenize.NewCharsFromText(string(testfiles.Read(t, "corpora/tinyshakespeare.txt"))+"\uFFFD", "chars") // (the corpus has invalid UTF-8)
			r.AppendEOD = false
		}, "tokenizer"},
		{"input", func(r *TokenizeRun) { r.Splits[1].Inputs = r.Splits[0].Inputs[:1] }, "input"},
		{"params", func(r *TokenizeRun) { r.Params = map[string]string{"filter": "Enron Emails"} }, "settings"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := t.TempDir()
			interruptAfter(t, resumeJob(t, corpusDir, out, tok), 4)
			run := resumeJob(t, corpusDir, out, tok)
			tc.change(run)
			m, stats, err := run.Run(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if stats.ResumedShards != 0 || !strings.Contains(stats.Restarted, tc.mention) {
				t.Fatalf("kept %d shards; restarted %q, want a mention of %q", stats.ResumedShards, stats.Restarted, tc.mention)
			}
			// The dataset is the changed job's, as a fresh run writes it.
			ref := t.TempDir()
			fresh := resumeJob(t, corpusDir, ref, tok)
			tc.change(fresh)
			fm, _, err := fresh.Run(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(m.Shards) != fmt.Sprint(fm.Shards) {
				t.Fatalf("the restarted run's shards differ from a fresh run's")
			}
		})
	}
}

// TestResumeTamperedShard: a journaled shard whose bytes changed is redone, with every
// shard after it in its split, and the result is byte-identical to an uninterrupted run.
func TestResumeTamperedShard(t *testing.T) {
	corpusDir := t.TempDir()
	splitCorpus(t, corpusDir)
	tok := gpt2(t)
	want, _, _ := referenceRun(t, corpusDir, tok)
	for _, file := range []string{"sh_text_document_001.bin", "sh_text_document_001.idx"} {
		t.Run(file, func(t *testing.T) {
			out := t.TempDir()
			interruptAfter(t, resumeJob(t, corpusDir, out, tok), 5) // 5 shards journaled
			p := filepath.Join(out, file)
			data, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			data[len(data)-3] ^= 0x40
			os.WriteFile(p, data, 0o644)
			_, stats, err := resumeJob(t, corpusDir, out, tok).Run(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if stats.ResumedShards != 1 {
				t.Errorf("kept %d shards, want 1 (the one before the tampered one)", stats.ResumedShards)
			}
			sameFiles(t, "tampered "+file, snapshot(t, out), want)
		})
	}
	t.Run("deleted", func(t *testing.T) {
		out := t.TempDir()
		interruptAfter(t, resumeJob(t, corpusDir, out, tok), 5)
		os.Remove(filepath.Join(out, "sh_text_document_002.bin"))
		_, stats, err := resumeJob(t, corpusDir, out, tok).Run(context.Background())
		if err != nil || stats.ResumedShards != 2 {
			t.Fatalf("kept %d shards (want 2): %v", stats.ResumedShards, err)
		}
		sameFiles(t, "deleted shard", snapshot(t, out), want)
	})
}

// TestResumeComplete: running a finished job again does nothing and says so; --overwrite
// writes it again.
func TestResumeComplete(t *testing.T) {
	corpusDir := t.TempDir()
	splitCorpus(t, corpusDir)
	tok := gpt2(t)
	out := t.TempDir()
	m, _, err := resumeJob(t, corpusDir, out, tok).Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := snapshot(t, out)
	run := resumeJob(t, corpusDir, out, tok)
	writes := 0
	run.hooks.event = func(string) { writes++ }
	again, stats, err := run.Run(context.Background())
	if err != nil || !stats.AlreadyComplete || writes != 0 || again.Documents != m.Documents || stats.Docs != m.Documents || stats.Shards != len(m.Shards) {
		t.Fatalf("second run: %v, %d events, %+v", err, writes, stats)
	}
	if len(stats.Splits) != 3 || stats.Splits[1].Split != "val" {
		t.Errorf("already-complete stats per split: %+v", stats.Splits)
	}
	sameFiles(t, "no-op", snapshot(t, out), want)

	run = resumeJob(t, corpusDir, out, tok)
	run.Overwrite = true
	if _, stats, err = run.Run(context.Background()); err != nil || stats.AlreadyComplete || stats.ResumedShards != 0 {
		t.Fatalf("--overwrite: %v %+v", err, stats)
	}
	sameFiles(t, "overwritten", snapshot(t, out), want)

	// Another job's dataset is refused, as without Resume.
	run = resumeJob(t, corpusDir, out, tok)
	run.ShardBytes = 0
	if _, _, err := run.Run(context.Background()); err == nil || !strings.Contains(err.Error(), "--overwrite") {
		t.Fatalf("another job over a finished dataset: %v", err)
	}
}

// TestResumeOneShardPerSplit: with ShardBytes 0, the finished splits are kept.
func TestResumeOneShardPerSplit(t *testing.T) {
	corpusDir := t.TempDir()
	splitCorpus(t, corpusDir)
	tok := gpt2(t)
	ref := t.TempDir()
	run := resumeJob(t, corpusDir, ref, tok)
	run.ShardBytes = 0
	if _, _, err := run.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	run = resumeJob(t, corpusDir, out, tok)
	run.ShardBytes = 0
	interruptAfter(t, run, 4) // train shard, train done, val shard, val done
	_, stats, err := run.Run(context.Background())
	if err != nil || stats.ResumedShards != 2 || stats.Splits[0].ResumedShards != 1 {
		t.Fatalf("kept %d shards (want train's and val's): %v", stats.ResumedShards, err)
	}
	if stats.Splits[0].Empty == 0 || stats.Splits[0].BytesIn == 0 {
		t.Errorf("the kept split's read counts are lost: %+v", stats.Splits[0])
	}
	sameFiles(t, "one shard per split", snapshot(t, out), snapshot(t, ref))
}

// TestNoJournalWithoutResume: `tokenize run` (no Resume) writes no journal and no job
// fingerprint.
func TestNoJournalWithoutResume(t *testing.T) {
	corpusDir := t.TempDir()
	splits := splitCorpus(t, corpusDir)
	out := t.TempDir()
	journaled := 0
	run := &TokenizeRun{Inputs: splits[0].Inputs, Store: dirStore(t, out), Name: "a", Tokenizer: gpt2(t), AppendEOD: true, ShardBytes: 8 << 10}
	run.hooks.event = func(e string) {
		if e == "journal" {
			journaled++
		}
	}
	m, _, err := run.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := m.Source["job"]; ok || journaled != 0 {
		t.Fatalf("job %v, %d journal saves", m.Source["job"], journaled)
	}
	for name := range snapshot(t, out) {
		if name == JournalName {
			t.Fatal("a run without Resume left a journal")
		}
	}
	if m.Shards[0].Split != "" {
		t.Fatal("an unsplit run's shards name a split")
	}
}

// TestResumeOnS3: the same on an S3 store (MinIO): an interrupted run's journaled shards
// are verified and kept, and the manifest is byte-identical to a directory run's.
func TestResumeOnS3(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a MinIO server")
	}
	ctx := context.Background()
	corpusDir := t.TempDir()
	splitCorpus(t, corpusDir)
	tok := gpt2(t)
	want, _, _ := referenceRun(t, corpusDir, tok)
	srv := miniotest.Start(t)
	srv.Setenv(t)
	st, err := storage.Open(ctx, "s3://"+srv.NewBucket(t)+"/data", storage.Options{S3Endpoint: srv.Endpoint})
	if err != nil {
		t.Fatal(err)
	}
	run := resumeJob(t, corpusDir, t.TempDir(), tok)
	run.Store, run.Dir = st, "sh"
	interruptAfter(t, run, 6)
	_, stats, err := run.Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if stats.ResumedShards < 6 || stats.Restarted != "" {
		t.Fatalf("kept %d shards (want 6 or more), restarted %q", stats.ResumedShards, stats.Restarted)
	}
	infos, err := st.List(ctx, "sh/")
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, info := range infos {
		obj, err := st.Open(ctx, info.Key)
		if err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(obj)
		obj.Close()
		if err != nil {
			t.Fatal(err)
		}
		got[strings.TrimPrefix(info.Key, "sh/")] = string(data)
	}
	sameFiles(t, "S3", got, want)
}

// TestResumeGarbledJournal: a journal that is not JSON (or of another version) is not
// trusted: the run starts over and says why.
func TestResumeGarbledJournal(t *testing.T) {
	corpusDir := t.TempDir()
	splitCorpus(t, corpusDir)
	tok := gpt2(t)
	want, _, _ := referenceRun(t, corpusDir, tok)
	for _, garbage := range []string{`{"format": "gptkit-run-jour`, `{"format": "gptkit-run-journal", "version": 99}`} {
		out := t.TempDir()
		interruptAfter(t, resumeJob(t, corpusDir, out, tok), 3)
		os.WriteFile(filepath.Join(out, JournalName), []byte(garbage), 0o644)
		_, stats, err := resumeJob(t, corpusDir, out, tok).Run(context.Background())
		if err != nil || stats.ResumedShards != 0 || !strings.Contains(stats.Restarted, "unusable") {
			t.Fatalf("%v: kept %d shards, restarted %q", err, stats.ResumedShards, stats.Restarted)
		}
		sameFiles(t, "garbled journal", snapshot(t, out), want)
	}
}
