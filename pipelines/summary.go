package pipelines

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"gptkit/prep"
)

// summaryExamples is how many bad-record examples Summary shows.
const summaryExamples = 5

// Summary is the end-of-run report for people: per split and in total the documents,
// tokens, text, bad and empty records, time, MB/s and tokens/s; then what was resumed,
// the first bad-record examples (file, line, reason, error) and where the report holding
// all of them is (report, "" when none was written), and the dataset's location.
func (s RunStats) Summary(dataset, report string) string {
	var b strings.Builder
	// The speeds are this run's: its text and tokens (a resumed run's kept shards'
	// left out) over its time.
	row := func(name string, docs, tokens, text, bad, empty, runText, runTokens int64, secs float64) {
		if s.AlreadyComplete {
			// Nothing was done: the counts are the finished dataset's, and it has no speed.
			fmt.Fprintf(&b, "%-8s %12d %14d %12.1f %8d %8d %10s %9s %10s\n", name, docs, tokens, float64(text)/1e6, bad, empty, "-", "-", "-")
			return
		}
		secs = max(secs, 1e-9)
		fmt.Fprintf(&b, "%-8s %12d %14d %12.1f %8d %8d %9.1fs %9.1f %10.0f\n", name, docs, tokens, float64(text)/1e6, bad, empty, secs, float64(runText)/1e6/secs, float64(runTokens)/secs)
	}
	fmt.Fprintf(&b, "\n%-8s %12s %14s %12s %8s %8s %10s %9s %10s\n", "split", "documents", "tokens", "text MB", "bad", "empty", "time", "MB/s", "tokens/s")
	var examples []prep.BadRecord
	counts := map[string]int64{}
	for _, sp := range s.Splits {
		name := sp.Split
		if name == "" {
			name = "train"
		}
		row(name, sp.Docs, sp.Tokens, sp.TextBytes, sp.Bad, sp.Empty, sp.RunTextBytes, sp.RunTokens, sp.Elapsed.Seconds())
		if sp.BadRecords != nil {
			examples = append(examples, sp.BadRecords.Examples...)
			for reason, n := range sp.BadRecords.Counts {
				counts[reason] += n
			}
		}
	}
	row("total", s.Docs, s.Tokens, s.TextBytes, s.Bad, s.Empty, s.RunTextBytes, s.RunTokens, s.Elapsed.Seconds())
	if s.Truncated > 0 {
		unread := ""
		switch {
		case s.UnreadUnknown && s.UnreadBytes > 0:
			unread = fmt.Sprintf("; at least %d bytes of the files not read", s.UnreadBytes)
		case !s.UnreadUnknown:
			unread = fmt.Sprintf("; %d bytes of the files not read", s.UnreadBytes)
		}
		// (Unknown: a finished dataset's, which its manifest does not keep.)
		fmt.Fprintf(&b, "truncated: %d damaged compressed streams kept up to the damage (--accept-truncated)%s\n", s.Truncated, unread)
	}
	if s.ResumedShards > 0 {
		fmt.Fprintf(&b, "resumed: kept %d finished shards (%d documents) from an interrupted run\n", s.ResumedShards, s.ResumedDocs)
	}
	if s.Restarted != "" {
		fmt.Fprintf(&b, "started over: %s\n", s.Restarted)
	}
	if len(counts) > 0 {
		var kinds []string
		for _, reason := range slices.Sorted(maps.Keys(counts)) {
			kinds = append(kinds, fmt.Sprintf("%s %d", reason, counts[reason]))
		}
		first := "; the first:"
		if len(examples) == 0 {
			first = "" // a finished dataset's counts, from its manifest
		}
		fmt.Fprintf(&b, "bad records: %d skipped, %d kept with invalid UTF-8 replaced (%s)%s\n", s.Bad, s.InvalidUTF8, strings.Join(kinds, ", "), first)
		// Records that were skipped first, then the ones kept with U+FFFD.
		slices.SortStableFunc(examples, func(a, b prep.BadRecord) int {
			return boolInt(a.Kept) - boolInt(b.Kept)
		})
		for _, e := range examples[:min(len(examples), summaryExamples)] {
			fmt.Fprintf(&b, "  %s: %s: %s\n", prep.Where(e.File, e.Line, e.Offset), e.Reason, e.Error)
		}
	}
	if report != "" {
		fmt.Fprintf(&b, "report: %s\n", report)
	}
	fmt.Fprintf(&b, "dataset: %s\n", dataset)
	return b.String()
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
