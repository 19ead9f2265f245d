package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gptkit/kernels/cuda"
	"gptkit/kernels/ref"
	"gptkit/shards"
	"gptkit/storage"
	"gptkit/tokenize"
	"gptkit/train"
)

// charText is a small, very regular text: a model learns it in a few steps.
func charText(n int) string {
	var b strings.Builder
	words := []string{"to be ", "or not ", "that is ", "the question. "}
	for i := 0; b.Len() < n; i++ {
		b.WriteString(words[i%len(words)])
	}
	return b.String()[:n]
}

// makeCharDataset writes a dataset as prep shakespeare does: a train and a val
// document of character ids, with chars.json beside the data.
func makeCharDataset(t *testing.T) (string, *tokenize.Tokenizer) {
	t.Helper()
	return makeCharDatasetOf(t, charText(8000))
}

// makeCharDatasetOf is makeCharDataset of a given text (90% train, 10% val).
func makeCharDatasetOf(t *testing.T, text string) (string, *tokenize.Tokenizer) {
	t.Helper()
	tok := tokenize.NewCharsFromText(text, "test-chars")
	dir := makeTokenDataset(t, tok, text)
	chars, err := tok.MarshalChars()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "chars.json"), chars, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir, tok
}

// makeTokenDataset writes text encoded by tok as a train (90%) and a val document,
// with a manifest naming tok.
func makeTokenDataset(t *testing.T, tok *tokenize.Tokenizer, text string) string {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	st, err := storage.Open(ctx, dir, storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	m := shards.NewManifest(shards.TokenizerInfo{Name: tok.Name(), Fingerprint: tok.Fingerprint(), VocabSize: tok.VocabSize(), EODID: tok.EOD()}, shards.Uint16, nil)
	n := len(text) * 9 / 10
	for _, s := range []struct{ prefix, split, text string }{{"c_text_document", "train", text[:n]}, {"c_val_text_document", "val", text[n:]}} {
		w, err := shards.NewWriter(ctx, st, s.prefix, shards.Uint16)
		if err != nil {
			t.Fatal(err)
		}
		if err := w.AddDocument(tok.Encode(s.text)); err != nil {
			t.Fatal(err)
		}
		info, err := w.Close()
		if err != nil {
			t.Fatal(err)
		}
		info.Split = s.split
		if err := m.Add("", info); err != nil {
			t.Fatal(err)
		}
	}
	if err := shards.WriteManifest(ctx, st, "", m); err != nil {
		t.Fatal(err)
	}
	return dir
}

// tinyArgs is a small, fast run on the reference kernels.
func tinyArgs(data, out string, steps string) []string {
	return []string{"--data", data, "--out", out, "--device", "ref", "--n-layer", "1", "--n-head", "2", "--n-embd", "16",
		"--block-size", "16", "--batch-size", "4", "--max-steps", steps, "--lr", "1e-2", "--warmup-steps", "2",
		"--lr-decay-steps", steps, "--eval-every", "10", "--eval-steps", "2", "--checkpoint-every", "10", "--cache-dir", out + "-cache"}
}

type runSummary struct {
	Step       int      `json:"step"`
	Loss       *float64 `json:"loss"`
	ValLoss    *float64 `json:"val_loss"`
	Checkpoint string   `json:"checkpoint"`
	Resumed    string   `json:"resumed_from"`
}

func parseSummary(t *testing.T, stdout string) runSummary {
	t.Helper()
	var s runSummary
	if err := json.Unmarshal([]byte(stdout), &s); err != nil {
		t.Fatalf("stdout %q: %v", stdout, err)
	}
	return s
}

// TestTrainCommand: train, sample, score and export through the command line.
func TestTrainCommand(t *testing.T) {
	data, tok := makeCharDataset(t)
	out := filepath.Join(t.TempDir(), "run")

	// The config file's keys, then the flags over them.
	cfgFile := filepath.Join(t.TempDir(), "c.yaml")
	os.WriteFile(cfgFile, []byte("n_layer: 3\nseed: 5\nweight_decay: 0.05\n"), 0o644)
	code, stdout, stderr := runTrain(t, append(tinyArgs(data, out, "30"), "--config", cfgFile)...)
	if code != 0 {
		t.Fatalf("train: exit %d: %s", code, stderr)
	}
	sum := parseSummary(t, stdout)
	if sum.Step != 30 || sum.Loss == nil || sum.ValLoss == nil || !strings.HasPrefix(sum.Checkpoint, out) {
		t.Fatalf("summary %+v", sum)
	}
	if *sum.Loss > 2.0 {
		t.Errorf("loss %.3f after 30 steps on a repetitive text", *sum.Loss)
	}
	resolved, err := os.ReadFile(filepath.Join(out, train.ConfigName))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{"n_layer: 1\n", "seed: 5\n", "weight_decay: 0.05\n", "device: ref\n"} {
		if !bytes.Contains(resolved, []byte(line)) {
			t.Errorf("config.yaml lacks %q:\n%s", line, resolved)
		}
	}
	if !strings.Contains(stderr, "msg=step") || !strings.Contains(stderr, "val_loss=") {
		t.Errorf("stderr has no step lines: %s", stderr)
	}

	// sample: the prompt and its continuation.
	code, stdout, stderr = runTrain(t, "sample", "--ckpt", out, "--prompt", "to be or", "--max-new-tokens", "12", "--temperature", "0", "--device", "ref")
	if code != 0 {
		t.Fatalf("sample: exit %d: %s", code, stderr)
	}
	if !strings.HasPrefix(stdout, "to be or") || len([]rune(strings.TrimSuffix(stdout, "\n"))) != len("to be or")+12 {
		t.Errorf("sample printed %q", stdout)
	}
	t.Logf("greedy sample: %q", stdout)
	if code, _, stderr := runTrain(t, "sample", "--ckpt", out, "--prompt", "XYZ", "--device", "ref"); code != 1 || !strings.Contains(stderr, "prompt") {
		t.Errorf("a prompt outside the vocabulary: exit %d, %s", code, stderr)
	}

	// score: {"loss": X}, the mean over every prediction.
	seqs := [][]int{tok.Encode("to be or not to"), tok.Encode("that is the qu")}
	tokensFile := filepath.Join(t.TempDir(), "tokens.json")
	raw, _ := json.Marshal(seqs)
	os.WriteFile(tokensFile, raw, 0o644)
	code, stdout, stderr = runTrain(t, "score", "--ckpt", out, "--tokens", tokensFile, "--device", "ref")
	if code != 0 {
		t.Fatalf("score: exit %d: %s", code, stderr)
	}
	var scored map[string]float64
	if err := json.Unmarshal([]byte(stdout), &scored); err != nil || len(scored) != 1 {
		t.Fatalf("score printed %q (%v)", stdout, err)
	}
	m, _, err := train.LoadCheckpoint(context.Background(), out, ref.New())
	if err != nil {
		t.Fatal(err)
	}
	var seqs32 [][]int32
	for _, s := range seqs {
		var s32 []int32
		for _, id := range s {
			s32 = append(s32, int32(id))
		}
		seqs32 = append(seqs32, s32)
	}
	want, _, _ := train.Score(m, seqs32)
	if scored["loss"] != want {
		t.Errorf("score %v, want %v", scored["loss"], want)
	}

	// export, then a run that starts from the exported weights with their shape.
	hf := filepath.Join(t.TempDir(), "hf")
	if code, stdout, stderr := runTrain(t, "export", "--ckpt", out, "--format", "hf", "--out", hf); code != 0 || strings.TrimSpace(stdout) != hf {
		t.Fatalf("export: exit %d: %s %s", code, stdout, stderr)
	}
	for _, f := range []string{"model.safetensors", "config.json", "tokenizer.json", "tokenizer_config.json"} {
		if _, err := os.Stat(filepath.Join(hf, f)); err != nil {
			t.Error(err)
		}
	}
	checkExportedChars(t, hf, tok)
	// Without the dataset the tokenizer is not found: nothing is written, and the
	// error says how to export the model alone, which removes an earlier export's
	// tokenizer files (they would not be this model's).
	lost := filepath.Join(t.TempDir(), "lost")
	if code, _, stderr := runTrain(t, "export", "--ckpt", out, "--out", lost, "--data", lost); code != 1 || !strings.Contains(stderr, "--no-tokenizer") {
		t.Errorf("export with a missing dataset: exit %d, want 1 and a hint to --no-tokenizer: %s", code, stderr)
	}
	if _, err := os.Stat(lost); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a failed export left %s: %v", lost, err)
	}
	if code, _, stderr := runTrain(t, "export", "--ckpt", out, "--out", hf, "--no-tokenizer", "--data", lost); code != 2 {
		t.Errorf("--no-tokenizer with --data: exit %d, want 2: %s", code, stderr)
	}
	if code, _, stderr := runTrain(t, "export", "--ckpt", out, "--out", hf, "--tokenizer", "gpt2", "--data", data); code != 2 || !strings.Contains(stderr, "give one") {
		t.Errorf("export with --tokenizer and --data: exit %d, want 2: %s", code, stderr)
	}
	if code, _, stderr := runTrain(t, "sample", "--ckpt", out, "--prompt", "to", "--tokenizer", "gpt2", "--data", data); code != 2 || !strings.Contains(stderr, "give one") {
		t.Errorf("sample with --tokenizer and --data: exit %d, want 2: %s", code, stderr)
	}
	// A save_pretrained's files beside an earlier export's go with them.
	for _, f := range []string{"special_tokens_map.json", "vocab.json", "merges.txt", "added_tokens.json"} {
		os.WriteFile(filepath.Join(hf, f), []byte("{}"), 0o644)
	}
	if code, _, stderr := runTrain(t, "export", "--ckpt", out, "--out", hf, "--no-tokenizer"); code != 0 {
		t.Fatalf("export --no-tokenizer: exit %d: %s", code, stderr)
	}
	for _, f := range []string{"tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "vocab.json", "merges.txt", "added_tokens.json"} {
		if _, err := os.Stat(filepath.Join(hf, f)); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("export --no-tokenizer left %s: %v", f, err)
		}
	}
	hf2 := filepath.Join(t.TempDir(), "hf2")
	os.MkdirAll(hf2, 0o755)
	os.WriteFile(filepath.Join(hf2, "special_tokens_map.json"), []byte(`{"bos_token": "<s>"}`), 0o644)
	if code, _, stderr := runTrain(t, "export", "--ckpt", out, "--out", hf2); code != 0 || !strings.Contains(stderr, "special_tokens_map.json") {
		t.Errorf("export over a save_pretrained's special_tokens_map.json: exit %d, want 0 and a warning naming it: %s", code, stderr)
	}
	if _, err := os.Stat(filepath.Join(hf2, "special_tokens_map.json")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("export left an earlier special_tokens_map.json: %v", err)
	}
	// A tokenizer write that fails (here tokenizer.json is a directory) leaves the
	// earlier tokenizer's files: they go only after the new ones are in place.
	hf3 := filepath.Join(t.TempDir(), "hf3")
	os.MkdirAll(filepath.Join(hf3, "tokenizer.json"), 0o755)
	os.WriteFile(filepath.Join(hf3, "vocab.json"), []byte("{}"), 0o644)
	if code, _, stderr := runTrain(t, "export", "--ckpt", out, "--out", hf3); code != 1 {
		t.Errorf("export over a tokenizer.json it cannot replace: exit %d, want 1: %s", code, stderr)
	}
	if _, err := os.Stat(filepath.Join(hf3, "vocab.json")); err != nil {
		t.Errorf("a failed export removed the earlier vocab.json: %v", err)
	}
	out2 := filepath.Join(t.TempDir(), "run2")
	args := []string{"--data", data, "--out", out2, "--device", "ref", "--batch-size", "4", "--max-steps", "2",
		"--warmup-steps", "0", "--lr-decay-steps", "2", "--eval-steps", "2", "--init-from", hf, "--cache-dir", out2 + "-cache"}
	if code, _, stderr := runTrain(t, args...); code != 0 {
		t.Fatalf("train --init-from: exit %d: %s", code, stderr)
	}
	resolved, _ = os.ReadFile(filepath.Join(out2, train.ConfigName))
	for _, line := range []string{"n_layer: 1\n", "n_embd: 16\n", "block_size: 16\n", "bias: false\n"} {
		if !bytes.Contains(resolved, []byte(line)) {
			t.Errorf("--init-from run's config.yaml lacks %q", line)
		}
	}
	ms := readMetrics(t, out2)
	if len(ms) != 2 || ms[0].Loss > *sum.Loss+0.3 {
		t.Errorf("--init-from run starts at loss %v; the exported model's last loss was %v", ms, *sum.Loss)
	}
	if code, _, stderr := runTrain(t, append(args, "--n-embd", "32", "--resume", "none", "--out", out2+"x")...); code != 1 || !strings.Contains(stderr, "init_from") {
		t.Errorf("--init-from with another shape: exit %d: %s", code, stderr)
	}
	if code, _, stderr := runTrain(t, append(args, "--resume", "none", "--out", out2+"y", "--init-from", out)...); code != 1 || !strings.Contains(stderr, "--resume "+out) {
		t.Errorf("--init-from a run directory: exit %d, want 1 and a hint to --resume: %s", code, stderr)
	}
	wider, _ := makeCharDatasetOf(t, charText(8000)+"XYZ#@")
	if code, _, stderr := runTrain(t, append(args, "--resume", "none", "--out", out2+"z", "--data", wider)...); code != 1 || !strings.Contains(stderr, "init_from "+hf+" was trained on the ids of tokenizer test-chars") {
		t.Errorf("--init-from weights of a smaller vocabulary: exit %d, want 1 naming both: %s", code, stderr)
	}
}

// checkExportedChars checks the tokenizer files export wrote for a character
// vocabulary: every character its own token, no merges, joined back by Fuse (HF's
// parity with them is tokenize's TestWriteHFJSONHFParity).
func checkExportedChars(t *testing.T, dir string, tok *tokenize.Tokenizer) {
	t.Helper()
	var tj struct {
		PreTokenizer any `json:"pre_tokenizer"`
		Decoder      struct{ Type string }
		Model        struct {
			Type   string
			Vocab  map[string]int
			Merges []string
		}
	}
	raw, err := os.ReadFile(filepath.Join(dir, "tokenizer.json"))
	if err == nil {
		err = json.Unmarshal(raw, &tj)
	}
	if err != nil {
		t.Fatal(err)
	}
	if tj.Model.Type != "BPE" || len(tj.Model.Vocab) != tok.VocabSize() || len(tj.Model.Merges) != 0 || tj.Decoder.Type != "Fuse" || tj.PreTokenizer != nil {
		t.Errorf("tokenizer.json of a character vocabulary of %d: model %s, %d vocab, %d merges, decoder %s, pre-tokenizer %v",
			tok.VocabSize(), tj.Model.Type, len(tj.Model.Vocab), len(tj.Model.Merges), tj.Decoder.Type, tj.PreTokenizer)
	}
	for id := range tok.VocabSize() {
		if c := tok.Decode([]int{id}); tj.Model.Vocab[c] != id {
			t.Errorf("tokenizer.json gives %q id %d, want %d", c, tj.Model.Vocab[c], id)
		}
	}
	var tc map[string]any
	raw, err = os.ReadFile(filepath.Join(dir, "tokenizer_config.json"))
	if err == nil {
		err = json.Unmarshal(raw, &tc)
	}
	if err != nil {
		t.Fatal(err)
	}
	if tc["tokenizer_class"] != "PreTrainedTokenizerFast" || tc["model_max_length"] != float64(16) || tc["eos_token"] != nil {
		t.Errorf("tokenizer_config.json: %v", tc)
	}
}

func readMetrics(t *testing.T, out string) []train.Metrics {
	t.Helper()
	f, err := os.Open(filepath.Join(out, train.MetricsName))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ms, err := train.ReadMetrics(f)
	if err != nil {
		t.Fatal(err)
	}
	return ms
}

// TestTrainInterruptResume: a cancelled run (SIGINT) saves a checkpoint and exits 1
// saying so; the same command line continues from it.
func TestTrainInterruptResume(t *testing.T) {
	data, _ := makeCharDataset(t)
	out := filepath.Join(t.TempDir(), "run")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		for ctx.Err() == nil {
			if b, err := os.ReadFile(filepath.Join(out, train.MetricsName)); err == nil && bytes.Count(b, []byte("\n")) >= 3 {
				cancel()
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
	}()
	args := append(tinyArgs(data, out, "300"), "--checkpoint-every", "0") // a checkpoint only at the end, or on the interruption
	var stdout, stderr bytes.Buffer
	code := run(ctx, args, strings.NewReader(""), &stdout, &stderr)
	if code != 1 || !strings.Contains(stderr.String(), "train: interrupted") || !strings.Contains(stderr.String(), "msg=interrupted") {
		t.Fatalf("interrupted: exit %d, stderr %s", code, stderr.String())
	}
	if stdout.Len() != 0 {
		t.Errorf("stdout %q after an interruption", stdout.String())
	}
	ms := readMetrics(t, out)
	code2, stdout2, stderr2 := runTrain(t, args...)
	if code2 != 0 {
		t.Fatalf("resume: exit %d: %s", code2, stderr2)
	}
	sum := parseSummary(t, stdout2)
	if sum.Resumed == "" || sum.Step != 300 || len(ms) >= 300 {
		t.Errorf("resumed run: %+v (the interrupted one stopped after step %d)", sum, len(ms))
	}
}

func TestTrainUsage(t *testing.T) {
	data, _ := makeCharDataset(t)
	out := filepath.Join(t.TempDir(), "run")
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	os.WriteFile(bad, []byte("n_layers: 3\n"), 0o644)
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--out", out}, 2, "data: the dataset DIR is required"},
		{[]string{"--data", data, "--device", "cuda"}, 1, "--device cuda: cuda: "}, // no GPU in CI: one line saying why (no driver or no device), a failure (exit 1), not a usage error
		{[]string{"--data", data, "--n-layer", "x"}, 2, "n-layer"},
		{[]string{"--data", data, "--bogus"}, 2, "bogus"},
		{[]string{"--data", data, "extra"}, 2, "unexpected argument"},
		{[]string{"--data", data, "--config", bad}, 2, "bad.yaml:1: unknown key \"n_layers\""},
		{[]string{"--data", data, "--n-embd", "10", "--n-head", "4"}, 2, "not a multiple"},
		{[]string{"--data", data + "/missing", "--out", out, "--device", "ref"}, 1, "train: "},
		{[]string{"sample", "--ckpt", out}, 2, "--prompt"},
		{[]string{"sample", "--ckpt", out, "--prompt", "x", "--device", "ref"}, 1, "train sample: "},
		{[]string{"score", "--ckpt", out}, 2, "--tokens"},
		// --threads -1 ran as 0 (one per CPU) where train refuses it
		{[]string{"sample", "--ckpt", out, "--prompt", "x", "--threads", "-1"}, 2, "--threads -1: want >= 0"},
		{[]string{"score", "--ckpt", out, "--tokens", "-", "--threads", "-2"}, 2, "--threads -2: want >= 0"},
		{[]string{"export", "--ckpt", out, "--out", out, "--format", "onnx"}, 2, "want hf"},
		// launcher flags out of range: usage errors naming the flag (--nnodes 0 ran as 1; the others exited 1)
		{[]string{"--data", data, "--nproc-per-node", "2", "--nnodes", "0"}, 2, "--nnodes 0: want >= 1"},
		{[]string{"--data", data, "--nproc-per-node", "2", "--nnodes", "2", "--node-rank", "2"}, 2, "--node-rank 2 is not in [0,2)"},
		{[]string{"--data", data, "--nproc-per-node", "2", "--max-restarts", "-1"}, 2, "--max-restarts -1: want >= 0"},
		// --master-port out of range and a malformed --split exited 1, found by the launcher or the loader
		{[]string{"--data", data, "--nproc-per-node", "2", "--master-port", "70000"}, 2, "--master-port 70000: want a port in [1,65535]"},
		{[]string{"--data", data, "--split", "abc"}, 2, `split "abc": part "abc" is not a non-negative number`},
		// --nnodes beside --hostfile was ignored without a word
		{[]string{"--data", data, "--hostfile", bad, "--nnodes", "3"}, 2, "the hostfile's lines are the nodes"},
	} {
		code, _, stderr := runTrain(t, tc.args...)
		if code != tc.code || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want %d and %q", tc.args, code, stderr, tc.code, tc.want)
		}
	}
	code, _, help := runTrain(t, "-h")
	if code != 0 || !strings.Contains(help, "--n-layer N") || !strings.Contains(help, "--resume MODE") {
		t.Errorf("-h: exit %d: %s", code, help)
	}
	// One default a flag ("(default: MASTER_PORT, else 29500) (default 29500)").
	for _, line := range strings.Split(help, "\n") {
		if strings.Count(line, "(default") > 1 {
			t.Errorf("-h gives two defaults: %q", strings.TrimSpace(line))
		}
	}
	// The flags, and the ones users expect.
	for _, f := range strings.Fields("config data out device n-layer n-head n-embd block-size batch-size grad-accum max-steps lr " +
		"min-lr warmup-steps lr-decay-steps weight-decay grad-clip eval-every eval-steps checkpoint-every seed resume " +
		"dropout bias beta1 beta2 keep-checkpoints threads order split init-from log-every") {
		if !strings.Contains(help, "\n  --"+f+" ") && !strings.Contains(help, "\n  --"+f+"\n") {
			t.Errorf("-h lists no --%s", f)
		}
	}
}

// FuzzParseTokenArrays: score's parser never panics and keeps every id it accepts.
func FuzzParseTokenArrays(f *testing.F) {
	for _, s := range []string{"[[1,2,3],[4,5]]", "[]", "[[]]", "[[1.5]]", "[[-1]]", "[[1]] x", "[[99999999999]]", "{}", "[[1e3]]"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		seqs, err := parseTokenArrays(data)
		if err != nil {
			return
		}
		var back [][]int64
		if json.Unmarshal(data, &back) != nil || len(back) != len(seqs) {
			t.Fatalf("accepted %q as %v", data, seqs)
		}
		for i := range back {
			for k := range back[i] {
				if int64(seqs[i][k]) != back[i][k] {
					t.Fatalf("%q: %v vs %v", data, seqs, back)
				}
			}
		}
	})
}

// TestDeviceAutoSaysWhy: --device auto on a machine without a usable GPU trains
// on the CPU and says why it did not take the GPU (it used to fall back
// silently), and the run's dtype is the CPU's float32.
func TestDeviceAutoSaysWhy(t *testing.T) {
	if be, err := cuda.Open(cuda.Options{}); err == nil {
		be.Close()
		t.Skip("a GPU is usable here: auto takes it")
	}
	data, _ := makeCharDataset(t)
	args := tinyArgs(data, filepath.Join(t.TempDir(), "run"), "2")
	for i, a := range args {
		if a == "--device" {
			args[i+1] = "auto"
		}
	}
	code, _, stderr := runTrain(t, args...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{"device auto: no usable GPU, running on the CPU", "reason=", "dtype=float32", "msg=memory"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr does not say %q:\n%s", want, stderr)
		}
	}
}

// TestSampleFromAnotherDirectory: a run trained on a dataset given relative to the
// directory train ran in samples from any directory: the checkpoint records the
// dataset's absolute path, where the tokenizer files beside the data are.
func TestSampleFromAnotherDirectory(t *testing.T) {
	data, _ := makeCharDataset(t)
	out := filepath.Join(t.TempDir(), "run")
	t.Chdir(filepath.Dir(data))
	if code, _, stderr := runTrain(t, tinyArgs(filepath.Base(data), out, "10")...); code != 0 {
		t.Fatalf("train: exit %d: %s", code, stderr)
	}
	t.Chdir(t.TempDir())
	code, stdout, stderr := runTrain(t, "sample", "--ckpt", out, "--prompt", "to be", "--max-new-tokens", "4", "--device", "ref")
	if code != 0 || !strings.HasPrefix(stdout, "to be") {
		t.Fatalf("sample from another directory: exit %d, %q: %s", code, stdout, stderr)
	}
}

// TestSampleFromAnotherDirectoryBlend: so does a run trained on a blend of datasets
// given relative to that directory, inline or in a blend file: the checkpoint records
// the blend with its datasets' absolute paths (the blend file's). (Only a single
// dataset's directory was recorded: the blend's tokenizer files were not found.)
func TestSampleFromAnotherDirectoryBlend(t *testing.T) {
	a, _ := makeCharDatasetOf(t, charText(8000))
	b, _ := makeCharDatasetOf(t, charText(8000))
	if filepath.Dir(a) != filepath.Dir(b) {
		t.Fatalf("datasets %s and %s in two directories", a, b)
	}
	blend := filepath.Join(filepath.Dir(a), "blend.yaml")
	os.WriteFile(blend, []byte("datasets:\n  - {path: "+filepath.Base(a)+", weight: 0.5}\n  - {path: "+filepath.Base(b)+", weight: 0.5}\n"), 0o644)
	for _, data := range []string{"0.5:" + filepath.Base(a) + ",0.5:" + filepath.Base(b), "blend.yaml"} {
		t.Run(data, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "run")
			t.Chdir(filepath.Dir(a))
			if code, _, stderr := runTrain(t, tinyArgs(data, out, "10")...); code != 0 {
				t.Fatalf("train: exit %d: %s", code, stderr)
			}
			t.Chdir(t.TempDir())
			code, stdout, stderr := runTrain(t, "sample", "--ckpt", out, "--prompt", "to be", "--max-new-tokens", "4", "--device", "ref")
			if code != 0 || !strings.HasPrefix(stdout, "to be") {
				t.Fatalf("sample from another directory: exit %d, %q: %s", code, stdout, stderr)
			}
		})
	}
}

// TestSampleDeviceErrors: `train sample --device cuda` on a machine without a usable GPU
// is a failure (exit 1) naming why, and a name that is no device a usage error (exit 2);
// both were usage errors. (CI has no GPU.)
func TestSampleDeviceErrors(t *testing.T) {
	for _, tc := range []struct {
		device string
		code   int
		want   string
	}{
		{"cuda", 1, "train sample: --device cuda: cuda: "},
		{"gpu", 2, `--device "gpu": want auto, cpu, ref, cuda or cuda-sim`},
	} {
		code, _, stderr := runTrain(t, "sample", "--ckpt", t.TempDir(), "--prompt", "x", "--device", tc.device)
		if code != tc.code || !strings.Contains(stderr, tc.want) {
			t.Errorf("--device %s: exit %d, stderr %q; want exit %d saying %q", tc.device, code, stderr, tc.code, tc.want)
		}
	}
}

// TestDataPathHints: --data given the directory `prep -d` was given (the dataset is one
// level down) names the subdirectory to pass; a path that is no dataset says how to make
// one. (Both said only what was wrong.)
func TestDataPathHints(t *testing.T) {
	data, _ := makeCharDataset(t)
	out := filepath.Join(t.TempDir(), "run")
	code, _, stderr := runTrain(t, tinyArgs(filepath.Dir(data), out, "2")...)
	if code != 1 || !strings.Contains(stderr, "pass one of them, e.g. --data "+data) {
		t.Errorf("--data of the parent: exit %d, %s", code, stderr)
	}
	code, _, stderr = runTrain(t, tinyArgs(filepath.Join(t.TempDir(), "nothing"), out, "2")...)
	if code != 1 || !strings.Contains(stderr, "no such dataset") || !strings.Contains(stderr, "prep NAME -d DIR") {
		t.Errorf("--data of nothing: exit %d, %s", code, stderr)
	}
}

// TestStepLogETA: a run's step log lines (stderr not a terminal: no live line) say how
// long the rest will take at the step's speed, and the last says nothing of it.
func TestStepLogETA(t *testing.T) {
	data, _ := makeCharDataset(t)
	out := filepath.Join(t.TempDir(), "run")
	code, _, stderr := runTrain(t, append(tinyArgs(data, out, "20"), "--log-every", "10")...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var steps []string
	for _, line := range strings.Split(stderr, "\n") {
		if strings.Contains(line, "msg=step ") {
			steps = append(steps, line)
		}
	}
	if len(steps) != 2 || !strings.Contains(steps[0], " eta=") || strings.Contains(steps[1], " eta=") {
		t.Errorf("step lines: %q; want an eta on the first and none on the last", steps)
	}
}
