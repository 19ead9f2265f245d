package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gptkit/internal/progress"
)

const pile00 = "train/00.jsonl.zst" // pile-00's one file, by its catalog name

// pileMirror serves recs as the Pile's train/00.jsonl.zst, with a SHA256SUMS listing its
// sha256; it returns the mirror and the compressed bytes.
func pileMirror(t *testing.T, recs []pileRecord) (*mirror, []byte) {
	t.Helper()
	z := zst(t, jsonl(recs))
	m := newMirror(t)
	m.put(pile00, z)
	m.putSums(map[string]string{pile00: sha256Hex(z)})
	return m, z
}

// TestPile00MatchesTokenizeRun: `prep pile-00` of a generated Pile shard, fetched from a
// mirror whose SHA256SUMS lists it, gives document for document and token for token what
// `tokenize run` gives on the decompressed JSONL, and what encoding each non-empty text
// (lists of strings joined with "\n\n") followed by the end-of-document id gives.
func TestPile00MatchesTokenizeRun(t *testing.T) {
	// Not parallel: it counts the requests that reach the fake internet.
	tok := gpt2(t)
	recs := genPile(t, 3000, 1)
	m, _ := pileMirror(t, recs)
	data := t.TempDir()
	before := internetHits()
	out, errOut := mustPrep(t, "pile-00", "-d", data, "--mirror", m.base(), "--tokenizer", gpt2Dir(t), "--workers", "2")
	ds := filepath.Join(data, "pile-00")

	ref := referenceRun(t, tok, writeFile(t, t.TempDir(), "00.jsonl", jsonl(recs)))
	got := datasetDocs(t, ds)
	compareDocs(t, "prep vs tokenize run", got, datasetDocs(t, ref))
	want := encodeAll(tok, texts(recs, ""), tok.EOD())
	compareDocs(t, "prep vs encoding the texts", got, want)
	if len(want) < 2500 || len(want) == len(recs) {
		t.Fatalf("the generated corpus has %d documents of %d records: not the mix it should be", len(want), len(recs))
	}
	// Both are one shard: the same bytes.
	for _, ext := range []string{".bin", ".idx"} {
		a, err := os.ReadFile(filepath.Join(ds, "pile-00_text_document"+ext))
		if err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(filepath.Join(ref, "reference_text_document"+ext))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(a, b) {
			t.Errorf("pile-00_text_document%s differs from tokenize run's", ext)
		}
	}

	man := readManifest(t, ds)
	var tokens int64
	for _, d := range want {
		tokens += int64(len(d))
	}
	if man.Documents != int64(len(want)) || man.Tokens != tokens || len(man.Shards) != 1 || man.Shards[0].Split != "train" ||
		man.Tokenizer.Fingerprint != tok.Fingerprint() || man.Tokenizer.EODID != tok.EOD() {
		t.Errorf("manifest: %d documents, %d tokens, shards %+v, tokenizer %+v; want %d documents, %d tokens, one train shard, GPT-2",
			man.Documents, man.Tokens, man.Shards, man.Tokenizer, len(want), tokens)
	}
	if wantOut := fmt.Sprintf("%s/manifest.json: %d documents, %d tokens, 1 shards\n", ds, len(want), tokens); out != wantOut {
		t.Errorf("stdout %q, want %q", out, wantOut)
	}
	hasAll(t, "stderr", errOut, "total", fmt.Sprint(len(want)), "dataset: "+ds)
	if _, err := os.Stat(filepath.Join(ds, "downloads")); !os.IsNotExist(err) {
		t.Errorf("the downloads are still there without --keep-downloads: %v", err)
	}
	if hits := internetHitsSince(before); len(hits) > 0 {
		t.Errorf("with a working mirror, prep went to %v", hits)
	}
	if n := len(m.requestsFor(pile00)); n != 1 {
		t.Errorf("%s was requested %d times, want once", pile00, n)
	}
}

// TestMirrorSHA256SUMSWrong: a mirror whose SHA256SUMS gives another sha256 for the file
// fails the run (the catalog's own sources, tried next, answer 404 here), naming the
// file and the sha256, before anything is tokenized.
func TestMirrorSHA256SUMSWrong(t *testing.T) {
	t.Parallel()
	m, z := pileMirror(t, genPile(t, 500, 2))
	wrong := sha256Hex(append([]byte("another version "), z...))
	m.putSums(map[string]string{pile00: wrong})
	data := t.TempDir()
	code, out, errOut := runPrep(t, "pile-00", "-d", data, "--mirror", m.base(), "--tokenizer", gpt2Dir(t), "--progress", "off")
	if code != 1 || out != "" {
		t.Fatalf("exit %d, stdout %q; want 1 and nothing", code, out)
	}
	ds := filepath.Join(data, "pile-00")
	hasAll(t, "stderr", errOut, "prep pile-00: ", "00.jsonl.zst", "sha256", "want "+wrong, "--checksums")
	noManifest(t, ds)
	if _, err := os.Stat(filepath.Join(ds, "downloads", "train", "00.jsonl.zst")); !os.IsNotExist(err) {
		t.Errorf("the file that failed its check is in place: %v", err)
	}
	assertNothingTokenized(t, ds)
}

// TestCorruptedDownload: the mirror serves the file with one byte flipped, its
// SHA256SUMS the sha256 of the good file: exit 1 with a message naming the file and the
// sha256 mismatch; nothing is tokenized.
func TestCorruptedDownload(t *testing.T) {
	t.Parallel()
	m, z := pileMirror(t, genPile(t, 500, 3))
	bad := bytes.Clone(z)
	bad[len(bad)/2] ^= 0x20
	m.put(pile00, bad)
	data := t.TempDir()
	code, _, errOut := runPrep(t, "pile-00", "-d", data, "--mirror", m.base(), "--tokenizer", gpt2Dir(t), "--progress", "off")
	if code != 1 {
		t.Fatalf("exit %d, want 1; stderr:\n%s", code, errOut)
	}
	last := lastLine(errOut)
	hasAll(t, "the error line", last, "prep pile-00: ", filepath.Join("downloads", "train", "00.jsonl.zst"),
		m.base()+pile00, "sha256 is "+sha256Hex(bad), "want "+sha256Hex(z), "the file was discarded")
	ds := filepath.Join(data, "pile-00")
	noManifest(t, ds)
	assertNothingTokenized(t, ds)
	for _, f := range []string{"00.jsonl.zst", "00.jsonl.zst.part"} {
		if _, err := os.Stat(filepath.Join(ds, "downloads", "train", f)); !os.IsNotExist(err) {
			t.Errorf("downloads/train/%s is there after a failed check: %v", f, err)
		}
	}
}

// assertNothingTokenized fails if the dataset directory holds shards or a journal.
func assertNothingTokenized(t *testing.T, ds string) {
	t.Helper()
	entries, _ := os.ReadDir(ds)
	for _, e := range entries {
		if strings.Contains(e.Name(), "text_document") || strings.HasPrefix(e.Name(), ".prep-journal") {
			t.Errorf("%s holds %s: something was tokenized", ds, e.Name())
		}
	}
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return lines[len(lines)-1]
}

// TestDownloadResumesAfterDroppedConnection: the mirror cuts the connection halfway
// through the first response; the download goes on with a Range request for the rest,
// and the run succeeds.
func TestDownloadResumesAfterDroppedConnection(t *testing.T) {
	t.Parallel()
	tok := gpt2(t)
	recs := genPile(t, 2000, 4)
	m, z := pileMirror(t, recs)
	m.dropFirst[pile00] = true
	data := t.TempDir()
	_, errOut := mustPrep(t, "pile-00", "-d", data, "--mirror", m.base(), "--tokenizer", gpt2Dir(t), "--progress", "off")
	reqs := m.requestsFor(pile00)
	if len(reqs) != 2 || reqs[0].Range != "" {
		t.Fatalf("requests for %s: %+v; want a plain GET, then one Range request", pile00, reqs)
	}
	var from int
	if _, err := fmt.Sscanf(reqs[1].Range, "bytes=%d-", &from); err != nil || from <= 0 || from > len(z)/2 {
		t.Errorf("the second request asked for Range %q; want bytes=N- with 0 < N <= %d (the bytes sent before the cut)", reqs[1].Range, len(z)/2)
	}
	hasAll(t, "stderr", errOut, "resuming download")
	compareDocs(t, "resumed download", datasetDocs(t, filepath.Join(data, "pile-00")), encodeAll(tok, texts(recs, ""), tok.EOD()))
}

// TestFilterSet: --filter-set keeps only the records of that Pile subset.
func TestFilterSet(t *testing.T) {
	t.Parallel()
	tok := gpt2(t)
	recs := genPile(t, 2000, 5)
	m, _ := pileMirror(t, recs)
	data := t.TempDir()
	mustPrep(t, "pile-00", "-d", data, "--mirror", m.base(), "--tokenizer", gpt2Dir(t), "--progress", "off", "--filter-set", "Enron Emails")
	want := encodeAll(tok, texts(recs, "Enron Emails"), tok.EOD())
	if len(want) < 200 || len(want) > len(texts(recs, ""))/3 {
		t.Fatalf("%d Enron documents: not the mix the test needs", len(want))
	}
	compareDocs(t, "--filter-set \"Enron Emails\"", datasetDocs(t, filepath.Join(data, "pile-00")), want)
	rep := readReport(t, filepath.Join(data, "pile-00"))
	var others int64
	for _, r := range recs {
		if r.Set != "Enron Emails" {
			others++
		}
	}
	// Filtered are the records of the other subsets and those without one (the filter
	// comes before the empty-text check).
	if s := rep.Splits[0]; s.Documents != int64(len(want)) || s.Filtered != others {
		t.Errorf("report: %d documents, %d filtered; want %d documents and %d filtered", s.Documents, s.Filtered, len(want), others)
	}
}

// TestRerunIsAlreadyComplete: rerunning a finished job says "already complete" without
// asking the mirror anything (its downloads are gone by then); --overwrite does it again.
func TestRerunIsAlreadyComplete(t *testing.T) {
	// Not parallel: it counts the requests that reach the fake internet.
	tok := gpt2(t)
	recs := genPile(t, 1000, 6)
	m, _ := pileMirror(t, recs)
	data := t.TempDir()
	args := []string{"pile-00", "-d", data, "--mirror", m.base(), "--tokenizer", gpt2Dir(t), "--progress", "off"}
	mustPrep(t, args...)
	ds := filepath.Join(data, "pile-00")
	first := readManifest(t, ds)

	reqs, hits := len(m.requests()), internetHits()
	out, _ := mustPrep(t, args...)
	wantOut := fmt.Sprintf("%s/manifest.json: already complete: %d documents, %d tokens, 1 shards\n", ds, first.Documents, first.Tokens)
	if out != wantOut {
		t.Errorf("rerun: stdout %q, want %q", out, wantOut)
	}
	if got := m.requests()[reqs:]; len(got) > 0 {
		t.Errorf("the rerun of a finished job asked the mirror for %+v", got)
	}
	if got := internetHitsSince(hits); len(got) > 0 {
		t.Errorf("the rerun of a finished job went to %v", got)
	}

	out, _ = mustPrep(t, append(args, "--overwrite")...)
	if strings.Contains(out, "already complete") {
		t.Errorf("--overwrite: stdout %q", out)
	}
	if n := len(m.requestsFor(pile00)); n != 2 {
		t.Errorf("--overwrite downloaded %s %d times in all, want twice", pile00, n)
	}
	compareDocs(t, "--overwrite", datasetDocs(t, ds), encodeAll(tok, texts(recs, ""), tok.EOD()))
	if m2 := readManifest(t, ds); !strings.Contains(fmt.Sprint(m2.Source["command"]), "--overwrite") {
		t.Errorf("the manifest's command %q is not the --overwrite run's", m2.Source["command"])
	}
}

// TestChecksumsFlag: --checksums FILE gives the files' sha256, before the mirror's
// SHA256SUMS; with --keep-downloads the verified download stays.
func TestChecksumsFlag(t *testing.T) {
	t.Parallel()
	tok := gpt2(t)
	recs := genPile(t, 500, 13)
	m, z := pileMirror(t, recs)
	m.putSums(map[string]string{pile00: sha256Hex([]byte("the mirror's SHA256SUMS is wrong"))})
	sums := t.TempDir()
	good := writeFile(t, sums, "good.sha256", []byte(sha256Hex(z)+"  "+pile00+"\n"))
	bad := writeFile(t, sums, "bad.sha256", []byte(sha256Hex(append(z, 0))+" *"+pile00+"\n"))
	malformed := writeFile(t, sums, "malformed.sha256", []byte("not a checksum line\n"))

	data := t.TempDir()
	mustPrep(t, "pile-00", "-d", data, "--mirror", m.base(), "--tokenizer", gpt2Dir(t), "--progress", "off", "--checksums", good, "--keep-downloads")
	ds := filepath.Join(data, "pile-00")
	compareDocs(t, "--checksums", datasetDocs(t, ds), encodeAll(tok, texts(recs, ""), tok.EOD()))
	kept, err := os.ReadFile(filepath.Join(ds, "downloads", "train", "00.jsonl.zst"))
	if err != nil || !bytes.Equal(kept, z) {
		t.Errorf("--keep-downloads: the download is not there as served (%v)", err)
	}

	data = t.TempDir()
	code, _, errOut := runPrep(t, "pile-00", "-d", data, "--mirror", m.base(), "--tokenizer", gpt2Dir(t), "--progress", "off", "--checksums", bad)
	if code != 1 {
		t.Fatalf("a wrong --checksums: exit %d, want 1; stderr:\n%s", code, errOut)
	}
	hasAll(t, "the error line", lastLine(errOut), "00.jsonl.zst", "sha256", "want "+sha256Hex(append(z, 0)))
	noManifest(t, filepath.Join(data, "pile-00"))

	code, _, errOut = runPrep(t, "pile-00", "-d", t.TempDir(), "--mirror", m.base(), "--tokenizer", gpt2Dir(t), "--checksums", malformed)
	if code != 1 {
		t.Fatalf("a malformed --checksums: exit %d, want 1; stderr:\n%s", code, errOut)
	}
	hasAll(t, "the error line", lastLine(errOut), "--checksums "+malformed, "line 1")
}

// TestDownloadPlan: before downloading, prep says how much it will fetch (the size the
// server gives where the catalog has none) and how long that takes, and warns, naming
// them, about files no sha256 checks. Before that, it says it asks the mirror for its
// SHA256SUMS: a mirror that never answered left prep silent for three minutes.
func TestDownloadPlan(t *testing.T) {
	recs := genPile(t, 200, 3)
	m, z := pileMirror(t, recs)
	_, errOut := mustPrep(t, "pile-00", "-d", t.TempDir(), "--mirror", m.base(), "--tokenizer", gpt2Dir(t), "--progress", "off")
	hasAll(t, "stderr with SHA256SUMS", errOut, `msg="asking the mirror for SHA256SUMS" url=`+m.URL+"/SHA256SUMS", "to download: 1 file, "+progress.FormatBytes(int64(len(z)))+" (sizes from the server): under a second at 1 Gbit/s, under a second at 100 Mbit/s, into ", "at 100 Mbit/s")
	if strings.Contains(errOut, "WARNING") {
		t.Errorf("a warning, though the mirror's SHA256SUMS lists the file: %s", errOut)
	}

	m.put("SHA256SUMS", nil)
	delete(m.files, "SHA256SUMS")
	_, errOut = mustPrep(t, "pile-00", "-d", t.TempDir(), "--mirror", m.base(), "--tokenizer", gpt2Dir(t), "--progress", "off")
	hasAll(t, "stderr without SHA256SUMS", errOut, "WARNING: 1 file has no known sha256: train/00.jsonl.zst", "--checksums FILE")
}
