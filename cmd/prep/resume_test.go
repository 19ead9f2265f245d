package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"gptkit/internal/testfiles"
	"gptkit/pipelines"
	"gptkit/shards"
)

// childEnv, when set, makes the test binary a `prep` process (childMain) that SIGKILLs
// itself at the moment its childSpec (JSON in the variable) names.
const childEnv = "GPTKIT_PREP_CHILD"

// childSpec is what a child process runs and when it kills itself.
type childSpec struct {
	Args []string
	// Journal and Shards: die once the journal at Journal lists Shards shards.
	Journal string
	Shards  int
	// Part and PartBytes: die once the download Part holds PartBytes bytes.
	Part      string
	PartBytes int64
}

// childMain runs prep as spec says and kills itself (SIGKILL: no deferred code, no
// flush) once the moment has come. A run that ends first exits 3.
func childMain(spec string) int {
	var c childSpec
	if err := json.Unmarshal([]byte(spec), &c); err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		return 4
	}
	go func() {
		for {
			if c.Journal != "" && journalShards(c.Journal) >= c.Shards {
				syscall.Kill(os.Getpid(), syscall.SIGKILL)
			}
			if c.Part != "" {
				if fi, err := os.Stat(c.Part); err == nil && fi.Size() >= c.PartBytes {
					syscall.Kill(os.Getpid(), syscall.SIGKILL)
				}
			}
			time.Sleep(100 * time.Microsecond)
		}
	}()
	code := run(context.Background(), c.Args, os.Stdout, os.Stderr)
	fmt.Fprintf(os.Stderr, "child: prep exited %d before it was killed\n", code)
	return 3
}

// journalShards is the number of shards the journal at path lists, or -1.
func journalShards(path string) int {
	data, err := os.ReadFile(path)
	if err != nil {
		return -1
	}
	var j struct {
		Splits []struct {
			Shards []json.RawMessage `json:"shards"`
		} `json:"splits"`
	}
	if json.Unmarshal(data, &j) != nil {
		return -1
	}
	n := 0
	for _, s := range j.Splits {
		n += len(s.Shards)
	}
	return n
}

// runKilledChild runs c in a child process in dir and waits for it to die of SIGKILL.
// It returns false if the child's prep finished before the moment to die came (the
// caller may start over), and fails the test if the child ended any other way.
func runKilledChild(t *testing.T, dir string, c childSpec) (killed bool) {
	t.Helper()
	spec, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), childEnv+"="+string(spec))
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	done := make(chan error, 1)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { done <- cmd.Wait() }()
	select {
	case err = <-done:
	case <-time.After(2 * time.Minute):
		cmd.Process.Kill()
		<-done
		t.Fatalf("the child did not die within 2 minutes; its output:\n%s", out.String())
	}
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		if ws, ok := exit.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL {
			return true
		}
		if exit.ExitCode() == 3 {
			t.Logf("the child finished before it could be killed; its output:\n%s", out.String())
			return false
		}
	}
	t.Fatalf("the child ended with %v, not killed; its output:\n%s", err, out.String())
	return false
}

// killChild runs c in a child process in dir until it is killed: a child whose prep
// finished first has dir/data removed and is run again, up to 3 times.
func killChild(t *testing.T, dir string, c childSpec) {
	t.Helper()
	for try := 1; !runKilledChild(t, dir, c); try++ {
		if try == 3 {
			t.Fatal("the child finished before it could be killed, 3 times")
		}
		if err := os.RemoveAll(filepath.Join(dir, "data")); err != nil {
			t.Fatal(err)
		}
	}
}

// TestKillAndResume kills `prep pile-00 --shard-size 64KB --workers 1` (a child process
// that SIGKILLs itself) in the middle of its download, after k of its shards, or twice,
// and reruns the same command in-process: the dataset directory ends byte for byte as an
// uninterrupted run's in another directory.
//
// Every run uses the same relative -d (each in its own working directory), so the
// manifests' inputs, splits and command are the same strings. Three fields of source
// differ and are left out of the comparison, as pipelines documents: "created", the time
// the job first started (the resumed manifest keeps the killed run's, from the journal;
// checked here to be that run's), and "job" and "job_inputs", the job fingerprint and
// its inputs, which identify the downloaded input by its size and modification time, and
// the two directories' downloads were made at different times.
func TestKillAndResume(t *testing.T) {
	// Not parallel: t.Chdir.
	recs := genPile(t, 16000, 12)
	m, _ := pileMirror(t, recs)
	args := []string{"pile-00", "-d", "data", "--mirror", m.base(), "--tokenizer", gpt2Dir(t),
		"--shard-size", "64KB", "--workers", "1", "--progress", "off"}

	refRoot := t.TempDir()
	t.Chdir(refRoot)
	mustPrep(t, args...)
	ref := filepath.Join(refRoot, "data", "pile-00")
	if n := len(readManifest(t, ref).Shards); n < 12 {
		t.Fatalf("the uninterrupted run wrote %d shards; the test needs a dozen or more", n)
	}

	type kill struct {
		shards    int   // after this many journaled shards
		partBytes int64 // or once the download has this many bytes
	}
	cases := []struct {
		name  string
		kills []kill
	}{
		{"mid-download", []kill{{partBytes: 40 << 10}}},
		{"after 1 shard", []kill{{shards: 1}}},
		{"after 4 shards", []kill{{shards: 4}}},
		{"twice", []kill{{shards: 2}, {shards: 6}}},
	}
	if testing.Short() {
		cases = cases[2:3]
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			t.Chdir(root)
			ds := filepath.Join(root, "data", "pile-00")
			journal := filepath.Join(ds, pipelines.JournalName)
			part := filepath.Join(ds, "downloads", "train", "00.jsonl.zst.part")
			started := time.Now().Truncate(time.Second)
			var firstKill time.Time
			for i, k := range tc.kills {
				c := childSpec{Args: args}
				if k.partBytes > 0 {
					m.setSlow(pile00, true)
					c.Part, c.PartBytes = part, k.partBytes
				} else {
					c.Journal, c.Shards = journal, k.shards
				}
				if i == 0 {
					killChild(t, root, c)
				} else if !runKilledChild(t, root, c) {
					t.Fatal("the second child finished before it could be killed")
				}
				m.setSlow(pile00, false)
				if i == 0 {
					firstKill = time.Now()
				}
				noManifest(t, ds)
				if k.shards > 0 {
					if n := journalShards(journal); n < k.shards {
						t.Fatalf("killed after %d shards, the journal lists %d", k.shards, n)
					}
				}
			}

			reqs := len(m.requestsFor(pile00))
			_, errOut := mustPrep(t, args...)
			if tc.kills[0].partBytes > 0 {
				got := m.requestsFor(pile00)[reqs:]
				if len(got) != 1 || !strings.HasPrefix(got[0].Range, "bytes=") {
					t.Errorf("after a kill mid-download, the rerun asked for %+v; want one Range request", got)
				}
				hasAll(t, "stderr", errOut, "resuming download")
			} else {
				hasAll(t, "stderr", errOut, "resumed: kept ")
				if got := m.requestsFor(pile00)[reqs:]; len(got) > 0 {
					t.Errorf("the download was complete, yet the rerun asked for %+v", got)
				}
			}
			compareDatasetDirs(t, ref, ds)
			// created is the start of the first run that tokenized: the killed one, unless
			// it died downloading.
			latest := firstKill
			if tc.kills[0].partBytes > 0 {
				latest = time.Now()
			}
			created, err := time.Parse(time.RFC3339, fmt.Sprint(readManifest(t, ds).Source["created"]))
			if err != nil || created.Before(started) || created.After(latest) {
				t.Errorf("the resumed manifest's created is %v (%v); want between %v and %v", created, err, started, latest)
			}
		})
	}
}

// setSlow makes requests for name without a Range header slow (or fast again).
func (m *mirror) setSlow(name string, slow bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.slow[name] = slow
}

// compareDatasetDirs fails unless dirs a and b hold files of the same names and bytes,
// the manifests compared without source.created, job and job_inputs (see TestKillAndResume).
func compareDatasetDirs(t *testing.T, a, b string) {
	t.Helper()
	names := func(dir string) []string {
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, e := range entries {
			out = append(out, e.Name())
		}
		return out
	}
	na, nb := names(a), names(b)
	if !slices.Equal(na, nb) {
		t.Fatalf("the directories hold different files:\n%v\n%v", na, nb)
	}
	for _, name := range na {
		da, err := os.ReadFile(filepath.Join(a, name))
		if err != nil {
			t.Fatal(err)
		}
		db, err := os.ReadFile(filepath.Join(b, name))
		if err != nil {
			t.Fatal(err)
		}
		if name == shards.ManifestName {
			da, db = normalizeManifest(t, da), normalizeManifest(t, db)
		}
		if !bytes.Equal(da, db) {
			t.Errorf("%s differs:\n%s\n%s", name, head(da), head(db))
		}
	}
}

// normalizeManifest drops source.created, job and job_inputs from a manifest.
func normalizeManifest(t *testing.T, data []byte) []byte {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	src, _ := m["source"].(map[string]any)
	if src["created"] == nil || src["job"] == nil {
		t.Errorf("the manifest's source has no created or no job: %v", src)
	}
	delete(src, "created")
	delete(src, "job")
	delete(src, "job_inputs")
	out, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func head(b []byte) string {
	if len(b) > 2000 || !json.Valid(b) {
		return fmt.Sprintf("%d bytes", len(b))
	}
	return string(b)
}

// TestShakespeareKillAndResume: `prep shakespeare` resumes too. Its train and val texts
// are cut from the download again by every run, and must still be the same job's
// inputs: the resumed run keeps the shards of the killed one, and ends as an
// uninterrupted run does, chars.json included.
func TestShakespeareKillAndResume(t *testing.T) {
	// Not parallel: t.Chdir.
	// Each split is one document, so one shard: the child dies after the train split,
	// in the val split. To give it the time, input.txt is four tiny Shakespeares (the
	// mirror's SHA256SUMS vouches for it instead of the catalog's pinned sha256).
	text := bytes.Repeat(testfiles.Read(t, "corpora/tinyshakespeare.txt"), 4)
	m := newMirror(t)
	m.put("input.txt", text)
	m.putSums(map[string]string{"input.txt": sha256Hex(text)})
	args := []string{"shakespeare", "-d", "data", "--mirror", m.base(), "--workers", "1", "--progress", "off"}
	refRoot := t.TempDir()
	t.Chdir(refRoot)
	mustPrep(t, args...)
	ref := filepath.Join(refRoot, "data", "shakespeare")

	root := t.TempDir()
	t.Chdir(root)
	ds := filepath.Join(root, "data", "shakespeare")
	killChild(t, root, childSpec{Args: args, Journal: filepath.Join(ds, pipelines.JournalName), Shards: 1})
	noManifest(t, ds)
	_, errOut := mustPrep(t, args...)
	hasAll(t, "stderr", errOut, "resumed: kept ")
	if strings.Contains(errOut, "started over") {
		t.Errorf("the rerun did not resume:\n%s", errOut)
	}
	compareDatasetDirs(t, ref, ds)
}
