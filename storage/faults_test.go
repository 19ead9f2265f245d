package storage

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRerunRemovesDeadTemps: a writer killed before Commit leaves a temp file; the next
// Create of the same key removes it, and no sweep (whatever its age limit) ever removes
// a live writer's temp file (issue 15, item 14).
func TestRerunRemovesDeadTemps(t *testing.T) {
	st, loc := storeCases[0].open(t, Options{})
	const key = "data/a_text_document.bin"
	cmd := helperCmd(t, "crash", loc, key)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if line, err := bufio.NewReader(out).ReadString('\n'); err != nil || line != "ready\n" {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("helper: %q, %v", line, err)
	}
	// While the writer lives its temp file stays, even for a sweep of any age.
	if n, err := Sweep(ctx, st, key, 0); err != nil || n != 0 {
		t.Fatalf("Sweep of a live writer's temp file = %d, %v; want 0", n, err)
	}
	cmd.Process.Kill()
	cmd.Wait()
	if n := leftovers(t, st, key); n != 1 {
		t.Fatalf("%d temp files after the kill, want 1", n)
	}
	// The rerun: a live writer of the key (this one) beside the dead one's temp file.
	live, err := st.Create(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	defer live.Abort()
	if n := leftovers(t, st, key); n != 1 {
		t.Fatalf("%d temp files while the rerun writes, want its own only", n)
	}
	other, err := st.Create(ctx, key) // a second live writer must not remove the first's
	if err != nil {
		t.Fatal(err)
	}
	other.Abort()
	live.Write([]byte("x"))
	if err := live.Commit(); err != nil {
		t.Fatalf("the rerun's commit: %v", err)
	}
	assertNoLeftovers(t, st, key)
}

// TestSymlinkOutsideRefused: a key that is a symbolic link leading out of the store's
// directory is refused by Open, Stat, LocalPath and Fetch; one that stays inside is an
// object like any other (issue 15, item 15).
func TestSymlinkOutsideRefused(t *testing.T) {
	root, outside := t.TempDir(), t.TempDir()
	os.WriteFile(filepath.Join(outside, "secret"), []byte("not yours"), 0o644)
	os.WriteFile(filepath.Join(root, "real.bin"), []byte("inside"), 0o644)
	os.Symlink(filepath.Join(outside, "secret"), filepath.Join(root, "a.bin"))
	os.Symlink("real.bin", filepath.Join(root, "b.bin"))
	os.Symlink(outside, filepath.Join(root, "sub"))
	st := mustOpen(t, root, Options{})
	for _, key := range []string{"a.bin", "sub/secret"} {
		if _, err := st.Open(ctx, key); err == nil || !strings.Contains(err.Error(), "outside the store's directory") {
			t.Errorf("Open(%s) = %v, want a refusal", key, err)
		}
		if _, err := st.Stat(ctx, key); err == nil || !strings.Contains(err.Error(), "outside") {
			t.Errorf("Stat(%s) = %v, want a refusal", key, err)
		}
		if p, ok := st.LocalPath(key); ok {
			t.Errorf("LocalPath(%s) = %s", key, p)
		}
		if _, err := Fetch(ctx, st, key, t.TempDir(), ""); err == nil || !strings.Contains(err.Error(), "outside") {
			t.Errorf("Fetch(%s) = %v, want a refusal", key, err)
		}
	}
	if o, err := st.Open(ctx, "b.bin"); err != nil {
		t.Errorf("a link inside the store: %v", err)
	} else {
		o.Close()
	}
	// A store whose own directory is reached through a link is fine.
	link := filepath.Join(t.TempDir(), "link")
	os.Symlink(root, link)
	if o, err := mustOpen(t, link, Options{}).Open(ctx, "real.bin"); err != nil {
		t.Errorf("a store opened through a link: %v", err)
	} else {
		o.Close()
	}
}
