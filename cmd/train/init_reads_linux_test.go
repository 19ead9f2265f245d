package main

import (
	"bytes"
	"encoding/binary"
	"path/filepath"
	"syscall"
	"testing"

	"gptkit/train/hfgpt2"
)

// countOpens counts the opens of files named name in dir (inotify), from now until
// each call of the function it returns. Closes are watched too, not counted: inotify
// merges an event with the unread one before it when they are the same, which would
// count two opens with no close between once.
func countOpens(t *testing.T, name, dir string) func() int {
	t.Helper()
	fd, err := syscall.InotifyInit1(syscall.IN_NONBLOCK | syscall.IN_CLOEXEC)
	if err != nil {
		t.Skipf("inotify: %v", err)
	}
	t.Cleanup(func() { syscall.Close(fd) })
	if _, err := syscall.InotifyAddWatch(fd, dir, syscall.IN_OPEN|syscall.IN_CLOSE); err != nil {
		t.Fatalf("inotify watch %s: %v", dir, err)
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
				mask := binary.NativeEndian.Uint32(buf[off+4:])
				l := int(binary.NativeEndian.Uint32(buf[off+12:]))
				ev := buf[off+syscall.SizeofInotifyEvent : off+syscall.SizeofInotifyEvent+l]
				if mask&syscall.IN_OPEN != 0 && string(bytes.TrimRight(ev, "\x00")) == name {
					n++
				}
				off += syscall.SizeofInotifyEvent + l
			}
		}
	}
}

// TestInitFromReadsOnceCommand: `train --init-from DIR` reads DIR's config.json and
// model.safetensors' header once for the whole command: the shape it fills the
// unset keys from (shapeFromInit) and the run's weights come from one opening
// (train.Config.InitOpened). It read them twice, shapeFromInit opening the
// directory again before the run did.
func TestInitFromReadsOnceCommand(t *testing.T) {
	data, _ := makeCharDataset(t)
	_, hf := trainAndExport(t, data)
	out := filepath.Join(t.TempDir(), "run2")
	configOpens, weightOpens := countOpens(t, hfgpt2.ConfigName, hf), countOpens(t, hfgpt2.WeightsName, hf)
	args := []string{"--data", data, "--out", out, "--device", "ref", "--batch-size", "4", "--max-steps", "2",
		"--warmup-steps", "0", "--lr-decay-steps", "2", "--eval-steps", "2", "--init-from", hf, "--cache-dir", out + "-cache"}
	if code, _, stderr := runTrain(t, args...); code != 0 {
		t.Fatalf("--init-from: exit %d: %s", code, stderr)
	}
	if c, w := configOpens(), weightOpens(); c != 1 || w != 1 {
		t.Errorf("train --init-from opened %s %d times and %s %d times, want once each", hfgpt2.ConfigName, c, hfgpt2.WeightsName, w)
	}
}
