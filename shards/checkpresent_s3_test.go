package shards

import (
	"context"
	"testing"

	"gptkit/internal/miniotest"
	"gptkit/storage"
)

// shards import of é.bin and è.bin makes shards é_text_document and è_text_document:
// their keys' common prefix ends inside the character ("\xc3"), a prefix S3 (MinIO)
// refuses: CheckPresent reported the whole dataset damaged on S3, and tokenize run and
// prep made it again every time.
func TestCheckPresentNamesSplittingACharacterS3(t *testing.T) {
	ctx := context.Background()
	srv := miniotest.Start(t)
	srv.Setenv(t)
	st, err := storage.Open(ctx, "s3://"+srv.NewBucket(t), storage.Options{S3Endpoint: srv.Endpoint})
	if err != nil {
		t.Fatal(err)
	}
	m := &Manifest{DType: Uint16}
	for _, p := range []string{"é_text_document", "è_text_document"} {
		m.Shards = append(m.Shards, ShardInfo{Prefix: p})
		for ext, size := range map[string]int{".bin": 0, ".idx": HeaderSize + 8} {
			w, err := st.Create(ctx, p+ext)
			if err != nil {
				t.Fatal(err)
			}
			w.Write(make([]byte, size))
			if err := w.Commit(); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := CheckPresent(ctx, st, "", m); err != nil {
		t.Fatalf("CheckPresent of a whole dataset: %v", err)
	}
}
