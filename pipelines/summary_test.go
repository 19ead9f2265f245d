package pipelines

import (
	"strings"
	"testing"
	"time"

	"gptkit/prep"
)

// TestSummaryAlreadyComplete: the table of a rerun that found its dataset finished
// shows the dataset's counts and no speeds (it read 8000000000 tokens/s: the counts
// over the microseconds the rerun took).
func TestSummaryAlreadyComplete(t *testing.T) {
	s := RunStats{AlreadyComplete: true, Docs: 40, Tokens: 8000, TextBytes: 30000, Elapsed: time.Microsecond}
	got := s.Summary("out", "")
	if strings.Contains(got, "8000000000") || !strings.Contains(got, "8000") {
		t.Fatalf("summary of an already complete run:\n%s", got)
	}
	for _, line := range strings.Split(got, "\n") {
		if strings.HasPrefix(line, "total") && strings.Count(line, " -") != 3 {
			t.Errorf("total row %q: want - for time, MB/s and tokens/s", line)
		}
	}
}

// TestSummaryParquetRows: a bad record of a Parquet file was placed at "line N" in
// the summary's examples, where N is its row; and a document too long to encode too.
func TestSummaryParquetRows(t *testing.T) {
	ex := []prep.BadRecord{{File: "a.parquet", Line: 7, Reason: prep.ReasonNotText, Error: "null"}, {File: "b.jsonl", Line: 3, Reason: prep.ReasonNotText, Error: "null"}}
	s := RunStats{Bad: 2, Splits: []SplitStats{{Bad: 2, BadRecords: &prep.BadRecordReport{Counts: map[string]int64{prep.ReasonNotText: 2}, Examples: ex}}}}
	got := s.Summary("out", "")
	if !strings.Contains(got, "a.parquet row 7: ") || !strings.Contains(got, "b.jsonl line 3: ") {
		t.Errorf("summary:\n%s", got)
	}
	if got := docWhere(prep.Doc{Source: "a.parquet", Line: 9}); got != "a.parquet row 9" {
		t.Errorf("docWhere of a Parquet row: %q", got)
	}
}

// TestSummaryResumedSpeeds: a resumed run's MB/s and tokens/s divided all the
// split's text and tokens, the kept shards' included, by this run's time (43 MB/s
// where 17 was real); now this run's only.
func TestSummaryResumedSpeeds(t *testing.T) {
	sp := SplitStats{Docs: 10, Tokens: 10e6, TextBytes: 430e6, RunTextBytes: 170e6, RunTokens: 4e6, ResumedShards: 3, Elapsed: 10 * time.Second}
	s := RunStats{Docs: 10, Tokens: 10e6, TextBytes: 430e6, RunTextBytes: 170e6, RunTokens: 4e6, ResumedShards: 3, Elapsed: 10 * time.Second, Splits: []SplitStats{sp}}
	for _, line := range strings.Split(s.Summary("out", ""), "\n") {
		if f := strings.Fields(line); len(f) == 9 && (f[0] == "train" || f[0] == "total") {
			if f[3] != "430.0" || f[7] != "17.0" || f[8] != "400000" {
				t.Errorf("row %q: want 430.0 text MB at 17.0 MB/s and 400000 tokens/s", line)
			}
		}
	}
}
