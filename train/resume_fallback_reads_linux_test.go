package train

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"gptkit/kernels/cpu"
	"gptkit/train/checkpoint"
)

// watchOpens counts the opens of files named name in dirs (inotify), from now until
// each call of the function it returns. Closes are watched too, though not counted:
// inotify merges an event with the unread one before it when they are the same, and
// two opens with no close between (one file read twice, back to back) counted once.
func watchOpens(t *testing.T, name string, dirs ...string) func() int {
	t.Helper()
	fd, err := syscall.InotifyInit1(syscall.IN_NONBLOCK | syscall.IN_CLOEXEC)
	if err != nil {
		t.Skipf("inotify: %v", err)
	}
	t.Cleanup(func() { syscall.Close(fd) })
	for _, d := range dirs {
		if _, err := syscall.InotifyAddWatch(fd, d, syscall.IN_OPEN|syscall.IN_CLOSE); err != nil {
			t.Fatalf("inotify watch %s: %v", d, err)
		}
	}
	n := 0
	buf := make([]byte, 64<<10)
	return func() int {
		for {
			k, err := syscall.Read(fd, buf)
			if k <= 0 || err != nil {
				return n
			}
			for off := 0; off+syscall.SizeofInotifyEvent <= k; {
				l := int(binary.NativeEndian.Uint32(buf[off+12:]))
				ev := buf[off+syscall.SizeofInotifyEvent : off+syscall.SizeofInotifyEvent+l]
				mask := binary.NativeEndian.Uint32(buf[off+4:])
				if mask&syscall.IN_OPEN != 0 && string(bytes.TrimRight(ev, "\x00")) == name {
					n++
				}
				off += syscall.SizeofInotifyEvent + l
			}
		}
	}
}

// TestResumeFallbackReadsFew: resume auto over a run that keeps all of its 10
// checkpoints, the newest damaged, falls back to the one before reading two
// checkpoint.json: the newest's, to find it, and the one before's, to find it and
// to read its files against. It read every checkpoint's twice more (a scan for the
// older one, another to set the newer ones aside) and the older one's once more:
// 22 reads, one GET each were the checkpoints on S3. What it logs, and where it
// continues from, are as before.
func TestResumeFallbackReadsFew(t *testing.T) {
	cfg := tinyConfig(t, tinyDataset(t))
	cfg.Dropout, cfg.EvalSteps, cfg.MaxSteps, cfg.LRDecaySteps, cfg.CheckpointEvery = 0, 0, 10, 12, 1
	if _, err := Run(context.Background(), cfg, cpu.New(1), Single{}, testLogger(t)); err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(cfg.Out, CheckpointsDir)
	file := filepath.Join(root, checkpoint.DirName(10), OptimizerFile)
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)-2] ^= 0x40
	if err := os.WriteFile(file, b, 0o644); err != nil {
		t.Fatal(err)
	}
	var dirs []string
	for s := int64(1); s <= 10; s++ {
		dirs = append(dirs, filepath.Join(root, checkpoint.DirName(s)))
	}
	opens := watchOpens(t, checkpoint.ManifestName, dirs...)

	var logs bytes.Buffer
	res := cfg
	res.MaxSteps, res.CheckpointEvery = 11, 100
	got, err := Run(context.Background(), res, cpu.New(1), Single{}, slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn})))
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(root, checkpoint.DirName(9)); got.ResumedFrom != want || got.Step != 11 {
		t.Fatalf("resumed from %q to step %d, want from %q to 11", got.ResumedFrom, got.Step, want)
	}
	if n := opens(); n != 2 {
		t.Errorf("the resume opened %s %d times, want 2 (the newest's, the one before's)", checkpoint.ManifestName, n)
	}
	for _, want := range []string{"the newest checkpoint is damaged: continuing from the one before it",
		"damaged=" + filepath.Join(root, checkpoint.DirName(10)), "continuing_from=" + filepath.Join(root, checkpoint.DirName(9)),
		"moved_to=" + filepath.Join(root, checkpoint.AsidePrefix+"after-"+checkpoint.DirName(9))} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("log lacks %q:\n%s", want, logs.String())
		}
	}
	if strings.Count(logs.String(), "level=WARN") != 1 {
		t.Errorf("want one warning:\n%s", logs.String())
	}
	if _, err := os.Stat(filepath.Join(root, checkpoint.DirName(10))); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the damaged checkpoint is still in %s: %v", root, err)
	}
}
