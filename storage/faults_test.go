package storage

import (
	"bufio"
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
