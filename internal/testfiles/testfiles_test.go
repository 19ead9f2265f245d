package testfiles

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"testing"
)

// TestShippedFiles checks the digests NOTICE gives for the files tests read.
func TestShippedFiles(t *testing.T) {
	for rel, want := range map[string]string{
		"tokenizers/gpt2/tokenizer.json": "f6ed3d307010c244c22aeffbde05f419cf277c23e64cf98b673cac5449cfeff5",
		"corpora/parity.jsonl":           "f35a97576345eedac64dbcb0c4807e2055289b922a70fbb8ec91456596ab2eea",
		"golden/gpt2.ids":                "2da79c4934277f46502b9cc95e65b73a30aa900bb81611c060a1dcbac2aa7bb5",
		"golden/neox-20b.ids":            "f7a21e3a0a9059f8cf1e22236841e7484d7ee36ca9a461861bae3573879085b6",
		"golden/cl100k_base.ids":         "2db76913f9bb3e6e2aad7dcf91e6c16f3a2c7945f33660f138cbbe89c1211e4d",
		"golden/o200k_base.ids":          "dc6cb43eaf217701eb33848724d53ede5d159fb90df34f73193e26a9ed97c7c1",
	} {
		sum := sha256.Sum256(Read(t, rel))
		if got := hex.EncodeToString(sum[:]); got != want {
			t.Errorf("%s: sha256 %s, want %s (update NOTICE and this test when tools/make-testdata.py changes it)", rel, got, want)
		}
	}
}

func TestGoldenMatchesCorpus(t *testing.T) {
	for _, name := range []string{"gpt2", "neox-20b", "cl100k_base", "o200k_base"} {
		docs := Golden(t, name)
		if len(docs) != 1896 || docs[0].Text == "" || len(docs[0].IDs) == 0 {
			t.Errorf("%s: %d docs, first %+v", name, len(docs), docs[0])
		}
	}
}

func TestPathOfADirectory(t *testing.T) {
	dir := Path(t, "tokenizers/gpt2")
	if filepath.Base(dir) != "gpt2" {
		t.Errorf("directory %s, want it named gpt2", dir)
	}
	for _, name := range []string{"vocab.json", "merges.txt", "tokenizer.json"} {
		if info, err := os.Stat(filepath.Join(dir, name)); err != nil || info.Size() == 0 {
			t.Errorf("%s: %v", name, err)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 3 {
		t.Errorf("%d entries, want 3", len(entries))
	}
}
