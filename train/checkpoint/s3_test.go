package checkpoint

import (
	"errors"
	"strings"
	"testing"

	"gptkit/internal/miniotest"
	"gptkit/storage"
)

func TestS3(t *testing.T) {
	srv := miniotest.Shared(t)
	srv.Setenv(t)
	run := "s3://" + srv.NewBucket(t) + "/runs/a"
	root := run + "/checkpoints"
	if _, _, err := Latest(ctx, root); !errors.Is(err, ErrNone) {
		t.Fatalf("empty prefix: %v, want ErrNone", err)
	}
	saveSteps(t, root, 2, 10, 20, 30)
	dir, step, err := Latest(ctx, root)
	if err != nil || step != 30 || dir != root+"/step_00000030" {
		t.Fatalf("Latest = %s, %d, %v", dir, step, err)
	}
	checkStep(t, dir, 30)
	if c, inc := steps(t, root); len(c) != 2 || c[1] != 20 || len(inc) != 0 {
		t.Fatalf("after keep 2: complete %v, incomplete %v", c, inc)
	}
	for _, in := range []string{run, run + "/", root, dir} {
		if got, err := Resolve(ctx, in); err != nil || got != dir {
			t.Errorf("Resolve(%s) = %s, %v; want %s", in, got, err, dir)
		}
	}

	st, err := storage.Open(ctx, root, storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	put := func(key string, data []byte) {
		w, err := st.Create(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		w.Write(data)
		if err := w.Commit(); err != nil {
			t.Fatal(err)
		}
	}
	// An interrupted upload (files, no checkpoint.json) is skipped.
	put("step_00000040/model.bin", []byte("partial"))
	if _, step, err := Latest(ctx, root); err != nil || step != 30 {
		t.Fatalf("Latest with an interrupted upload = %d, %v", step, err)
	}
	entries, _ := Scan(ctx, root)
	if entries[0].Step != 40 || !strings.Contains(entries[0].Problem, "no checkpoint.json") {
		t.Fatalf("Scan[0] = %+v", entries[0])
	}
	// Same size, other bytes: Latest cannot tell, Open can.
	data := payload(30, 1<<20+3)
	data[0] ^= 0xff
	put("step_00000030/model.bin", data)
	if _, err := ReadFile(ctx, dir, "model.bin"); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), dir+"/model.bin") {
		t.Fatalf("overwritten object: %v, want ErrCorrupt naming it", err)
	}
	// Replacing step 30, then saving 50 with keep 2: 40 (interrupted, older) goes too.
	saveSteps(t, root, 0, 30)
	checkStep(t, dir, 30)
	saveSteps(t, root, 2, 50)
	if c, inc := steps(t, root); len(c) != 2 || c[0] != 50 || c[1] != 30 || len(inc) != 0 {
		t.Fatalf("after keep 2: complete %v, incomplete %v", c, inc)
	}
	if infos, _ := st.List(ctx, "step_00000020/"); len(infos) != 0 {
		t.Fatalf("removed checkpoint left %d objects", len(infos))
	}
}
