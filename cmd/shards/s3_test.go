package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"gptkit/internal/miniotest"
	"gptkit/shards"
	"gptkit/tokenize"
)

// TestS3 runs the commands against a dataset in MinIO (skipped with -short, and without a
// MinIO binary unless CI=true).
func TestS3(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a MinIO server")
	}
	srv := miniotest.Shared(t)
	srv.Setenv(t) // credentials and region; the endpoint is passed as --s3-endpoint too
	s3 := []string{"--s3-endpoint", srv.Endpoint, "--s3-path-style"}
	bucket := "s3://" + srv.NewBucket(t)
	loc := bucket + "/data/sample"

	local := filepath.Join(t.TempDir(), "sample")
	want := tokenizeDataset(t, local, sampleTexts)
	out := mustRun(t, append([]string{"merge", loc, local}, s3...)...)
	if out != fmt.Sprintf("%s/manifest.json: %d documents, %d tokens, 1 shards\n", loc, len(want), countTokens(want)) {
		t.Errorf("merge into S3 printed %q", out)
	}

	// verify reads S3 shards through the verified copies in --cache-dir, as cat does.
	cache := t.TempDir()
	out = mustRun(t, append([]string{"verify", loc, "--cache-dir", cache}, s3...)...)
	if !strings.HasPrefix(out, "ok: "+loc+": 1 shard, ") {
		t.Errorf("verify %s: %q", loc, out)
	}
	if entries, _ := os.ReadDir(cache); len(entries) == 0 {
		t.Error("verify left nothing in --cache-dir")
	}
	if v := infoJSON(t, loc, s3...); v["location"] != loc || v["documents"] != float64(len(want)) {
		t.Errorf("info --json %s: %v", loc, v)
	}
	for k := range want {
		if ids := catIDs(t, loc, k, append(s3, "--cache-dir", cache)...); !slices.Equal(ids, want[k]) {
			t.Errorf("cat %s --doc %d = %v, want %v", loc, k, ids, want[k])
		}
	}
	if entries, _ := os.ReadDir(cache); len(entries) == 0 {
		t.Error("cat left nothing in --cache-dir")
	}

	// A bare prefix in S3.
	prefix := loc + "/sample_text_document"
	if out := mustRun(t, append([]string{"verify", prefix, "--cache-dir", cache}, s3...)...); !strings.HasPrefix(out, "ok: "+prefix+": uint16, ") {
		t.Errorf("verify %s: %q", prefix, out)
	}
	if ids := catIDs(t, prefix+".idx", 1, append(s3, "--cache-dir", cache)...); !slices.Equal(ids, want[1]) {
		t.Errorf("cat %s --doc 1 = %v", prefix, ids)
	}

	// Export from S3 to S3.
	out = mustRun(t, append([]string{"convert", "--to", "nanogpt", loc, "--out", bucket + "/nano/train.bin", "--cache-dir", cache}, s3...)...)
	if out != fmt.Sprintf("%s/nano/train.bin: %d tokens\n", bucket, countTokens(want)) {
		t.Errorf("convert --to nanogpt into S3 printed %q", out)
	}

	// Damage the shard behind the manifest's back: verify names the object and the checksum.
	st := openStore(t, loc)
	w, err := st.Create(t.Context(), "sample_text_document.bin")
	if err != nil {
		t.Fatal(err)
	}
	w.Write(make([]byte, 2*countTokens(want)))
	if err := w.Commit(); err != nil {
		t.Fatal(err)
	}
	out, _ = wantFailure(t, 1, []string{loc + "/sample_text_document.bin", "checksum"}, append([]string{"verify", loc, "--cache-dir", cache}, s3...)...)
	if !strings.Contains(out, "error: "+loc+"/sample_text_document.bin: checksum mismatch") {
		t.Errorf("verify of a damaged S3 dataset: %q", out)
	}
	wantFailure(t, 1, []string{"manifest.json", "does not exist"}, append([]string{"info", bucket + "/nothing"}, s3...)...)

	// cat --decode of a character-level dataset in S3: its chars.json is stored beside it.
	chars := tokenize.NewCharsFromText("to be or not", "mine-char")
	charsDir := filepath.Join(t.TempDir(), "chars")
	writeDataset(t, charsDir, tokenizerInfo(chars), [][]int{chars.Encode("not to be")})
	data, err := chars.MarshalChars()
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(charsDir, "chars.json"), data, 0o644)
	charsLoc := bucket + "/data/chars"
	mustRun(t, append([]string{"merge", charsLoc, charsDir}, s3...)...)
	cst := openStore(t, charsLoc)
	w, err = cst.Create(t.Context(), "chars.json")
	if err != nil {
		t.Fatal(err)
	}
	w.Write(data)
	if err := w.Commit(); err != nil {
		t.Fatal(err)
	}
	if got := catText(t, append([]string{charsLoc, "--doc", "0", "--cache-dir", cache}, s3...)...); got != "not to be" {
		t.Errorf("cat --decode from S3 with chars.json beside the data = %q", got)
	}
}

// TestS3CatDecodePart: cat --decode of one part of a partitioned run in S3 finds the
// run's chars.json two levels up, as it does locally (TestCatDecodePart).
func TestS3CatDecodePart(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a MinIO server")
	}
	offline(t)
	srv := miniotest.Shared(t)
	srv.Setenv(t)
	s3 := []string{"--s3-endpoint", srv.Endpoint, "--s3-path-style", "--cache-dir", t.TempDir()}
	loc := "s3://" + srv.NewBucket(t) + "/run"
	charsPartitionedRun(t, loc)
	part := loc + "/" + shards.PartDir(0, 2)
	if got := catText(t, append([]string{part, "--doc", "0"}, s3...)...); got != "doc a" {
		t.Errorf("cat --decode %s --doc 0 = %q", part, got)
	}
}
