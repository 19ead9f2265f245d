package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"gptkit/prep"
)

// prepReport is DIR/NAME/prep-report.json.
type prepReport struct {
	Splits []struct {
		Split       string               `json:"split"`
		Documents   int64                `json:"documents"`
		Bad         int64                `json:"bad"`
		InvalidUTF8 int64                `json:"invalid_utf8"`
		Filtered    int64                `json:"filtered"`
		Empty       int64                `json:"empty"`
		BadRecords  prep.BadRecordReport `json:"bad_records"`
	} `json:"splits"`
}

func readReport(t *testing.T, ds string) prepReport {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(ds, "prep-report.json"))
	if err != nil {
		t.Fatal(err)
	}
	var r prepReport
	if err := json.Unmarshal(data, &r); err != nil {
		t.Fatalf("prep-report.json: %v\n%s", err, data)
	}
	if len(r.Splits) != 1 {
		t.Fatalf("prep-report.json has %d splits, want 1:\n%s", len(r.Splits), data)
	}
	return r
}

// badLine is a malformed record put into a generated corpus at line Line.
type badLine struct {
	Line   int
	Text   string
	Reason string
}

var badLines = []badLine{
	{10, `{"text": "no closing quote}`, prep.ReasonInvalidJSON},
	{200, `{"text": 5, "meta": {"pile_set_name": "Enron Emails"}}`, prep.ReasonNotText},
	{400, `["a list", "not an object"]`, prep.ReasonNotObject},
	{600, `{"body": "the text is under another key"}`, prep.ReasonMissingText},
	{800, `not json at all`, prep.ReasonInvalidJSON},
}

// corpusWithBadLines is recs as JSONL with badLines put in at their lines (from 1).
func corpusWithBadLines(recs []pileRecord) []byte {
	var b strings.Builder
	i := 0
	for line := 1; i < len(recs); line++ {
		if k := slices.IndexFunc(badLines, func(l badLine) bool { return l.Line == line }); k >= 0 {
			b.WriteString(badLines[k].Text)
		} else {
			b.WriteString(recs[i].Line)
			i++
		}
		b.WriteByte('\n')
	}
	return []byte(b.String())
}

// TestBadRecords: with --on-error skip (the default) a corpus with malformed lines is
// tokenized without them and prep-report.json lists each (file and line); the exit
// status is 1, after the dataset is written, when the share of bad records is above
// --max-error-rate, else 0. --on-error fail stops at the first bad line, naming its file
// and line, and writes no dataset.
func TestBadRecords(t *testing.T) {
	t.Parallel()
	tok := gpt2(t)
	recs := genPile(t, 1000, 7)
	z := zst(t, corpusWithBadLines(recs))
	m := newMirror(t)
	m.put(pile00, z)
	want := encodeAll(tok, texts(recs, ""), tok.EOD())
	// The bad records are 5 of 1005: 0.5%.
	rate := float64(len(badLines)) / float64(len(recs)+len(badLines))

	prepArgs := func(data string, extra ...string) []string {
		return append([]string{"pile-00", "-d", data, "--mirror", m.base(), "--tokenizer", gpt2Dir(t), "--progress", "off"}, extra...)
	}
	checkReport := func(t *testing.T, ds string) {
		t.Helper()
		s := readReport(t, ds).Splits[0]
		if s.Bad != int64(len(badLines)) || s.Documents != int64(len(want)) || s.BadRecords.Bad() != int64(len(badLines)) {
			t.Errorf("report: %d documents, %d bad (%v); want %d and %d", s.Documents, s.Bad, s.BadRecords.Counts, len(want), len(badLines))
		}
		for _, bl := range badLines {
			if !slices.ContainsFunc(s.BadRecords.Examples, func(e prep.BadRecord) bool {
				return e.Line == bl.Line && e.Reason == bl.Reason && strings.HasSuffix(e.File, filepath.Join("downloads", "train", "00.jsonl.zst")) && e.Error != ""
			}) {
				t.Errorf("report: no example for line %d (%s) in %+v", bl.Line, bl.Reason, s.BadRecords.Examples)
			}
		}
	}

	t.Run("skip, rate above --max-error-rate", func(t *testing.T) {
		data := t.TempDir()
		code, out, errOut := runPrep(t, prepArgs(data, "--max-error-rate", "0.001")...)
		ds := filepath.Join(data, "pile-00")
		if code != 1 {
			t.Fatalf("exit %d, want 1; stderr:\n%s", code, errOut)
		}
		hasAll(t, "stdout", out, ds+"/manifest.json: ")
		hasAll(t, "the error line", lastLine(errOut), fmt.Sprintf("%d of %d records were bad", len(badLines), len(recs)+len(badLines)),
			"--max-error-rate", filepath.Join(ds, "prep-report.json"))
		compareDocs(t, "dataset with bad records skipped", datasetDocs(t, ds), want)
		checkReport(t, ds)

		// A rerun finds the dataset made and exits as the first run did, with the
		// counts its manifest keeps; the report stays the first run's. A higher
		// --max-error-rate accepts it.
		code, out, errOut = runPrep(t, prepArgs(data, "--max-error-rate", "0.001")...)
		if code != 1 {
			t.Fatalf("rerun: exit %d, want 1; stderr:\n%s", code, errOut)
		}
		hasAll(t, "rerun stdout", out, "already complete")
		hasAll(t, "the rerun's error line", lastLine(errOut), fmt.Sprintf("%d of %d records were bad", len(badLines), len(recs)+len(badLines)),
			"when the dataset was made", filepath.Join(ds, "prep-report.json"), "--max-error-rate")
		checkReport(t, ds)
		if code, _, errOut = runPrep(t, prepArgs(data, "--max-error-rate", fmt.Sprint(rate*2))...); code != 0 {
			t.Fatalf("rerun with a higher --max-error-rate: exit %d, want 0; stderr:\n%s", code, errOut)
		}
	})
	t.Run("skip, rate below --max-error-rate", func(t *testing.T) {
		data := t.TempDir()
		_, errOut := mustPrep(t, prepArgs(data, "--max-error-rate", fmt.Sprint(rate*2))...)
		ds := filepath.Join(data, "pile-00")
		// The summary names the first bad records and the report holding them all.
		file := filepath.Join(ds, "downloads", "train", "00.jsonl.zst")
		hasAll(t, "summary", errOut, "bad records: 5 skipped", "invalid_json 2", "not_object 1",
			file+" line 10: invalid_json: ", file+" line 200: not_text: ", "report: "+filepath.Join(ds, "prep-report.json"), "tokens/s")
		compareDocs(t, "dataset with bad records skipped", datasetDocs(t, ds), want)
		checkReport(t, ds)
		// A rerun with --on-error fail, which accepts no bad record, fails.
		code, out, errOut := runPrep(t, prepArgs(data, "--max-error-rate", fmt.Sprint(rate*2), "--on-error", "fail")...)
		if code != 1 {
			t.Fatalf("rerun with --on-error fail: exit %d, want 1; stderr:\n%s", code, errOut)
		}
		hasAll(t, "rerun stdout", out, "already complete")
		hasAll(t, "the error line", lastLine(errOut), "5 records were bad when the dataset was made (with --on-error skip)", "--on-error skip")
	})
	t.Run("fail", func(t *testing.T) {
		data := t.TempDir()
		code, _, errOut := runPrep(t, prepArgs(data, "--on-error", "fail")...)
		if code != 1 {
			t.Fatalf("exit %d, want 1; stderr:\n%s", code, errOut)
		}
		hasAll(t, "the error line", lastLine(errOut), filepath.Join("downloads", "train", "00.jsonl.zst")+" line 10: ")
		noManifest(t, filepath.Join(data, "pile-00"))
	})
}

// TestErrorRateCountsEveryRecord: the --max-error-rate share is of all the records read,
// as prep.Stats.ErrorRate defines it: with --filter-set keeping a fifth of them, 5 bad
// records of 1005 are 0.5%, under the default 1%, not 5 of the ~200 records kept.
func TestErrorRateCountsEveryRecord(t *testing.T) {
	t.Parallel()
	recs := genPile(t, 1000, 8)
	m := newMirror(t)
	m.put(pile00, zst(t, corpusWithBadLines(recs)))
	data := t.TempDir()
	code, _, errOut := runPrep(t, "pile-00", "-d", data, "--mirror", m.base(), "--tokenizer", gpt2Dir(t), "--progress", "off", "--filter-set", "Enron Emails")
	if code != 0 {
		t.Errorf("exit %d, want 0 (0.5%% of the records are bad); stderr:\n%s", code, errOut)
	}
	s := readReport(t, filepath.Join(data, "pile-00")).Splits[0]
	// The records without meta may count as filtered rather than bad: the two that are
	// no JSON at all are bad whatever the filter.
	if s.Bad < 2 || s.Documents != int64(len(texts(recs, "Enron Emails"))) {
		t.Errorf("report: %d documents, %d bad; want %d documents and at least 2 bad", s.Documents, s.Bad, len(texts(recs, "Enron Emails")))
	}
}
