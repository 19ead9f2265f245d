package pipelines

import (
	"bytes"
	"context"
	"log/slog"
	"maps"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"gptkit/shards"
)

// TestLocalPartsEqualSingle: a run as 2, 3 and 5 local parts at once gives the
// documents of a single-process run, split by split and in order, manifests equal but
// for the shards' layout, and the same counts (documents, tokens, empty and bad
// records, per split); rerun, it does nothing.
func TestLocalPartsEqualSingle(t *testing.T) {
	ctx := context.Background()
	splits := stripedCorpus(t, t.TempDir())
	ref := t.TempDir()
	refManifest, single, err := stripedJob(t, splits, ref).Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := splitDocs(t, dirStore(t, ref), "")
	var first string
	for _, k := range []int{2, 3, 5} {
		out := t.TempDir()
		run := stripedJob(t, splits, out)
		run.Workers, run.LocalParts = 6, k
		m, stats, err := run.Run(ctx)
		if err != nil {
			t.Fatalf("%d parts: %v", k, err)
		}
		if got := splitDocs(t, dirStore(t, out), ""); !reflect.DeepEqual(got, want) {
			t.Fatalf("%d parts: the documents differ from a single run's", k)
		}
		// (A merged manifest's source.job is the partitioned run's, not the single run's.)
		if c := comparable(m); first == "" {
			first = c
		} else if c != first {
			t.Fatalf("%d parts: merged manifest\n%s\nwant (2 parts)\n%s", k, c, first)
		}
		if m.Documents != refManifest.Documents || m.Tokens != refManifest.Tokens || m.DType != refManifest.DType {
			t.Fatalf("%d parts: %d documents, %d tokens, %s; want %d, %d, %s", k, m.Documents, m.Tokens, m.DType, refManifest.Documents, refManifest.Tokens, refManifest.DType)
		}
		if m.Source["num_workers"] != k || m.Part != nil {
			t.Fatalf("%d parts: source %v, part %+v", k, m.Source, m.Part)
		}
		if stats.Docs != single.Docs || stats.Tokens != single.Tokens || stats.Empty != single.Empty || stats.Bad != single.Bad ||
			stats.Shards != len(m.Shards) || len(stats.Splits) != len(single.Splits) || stats.AlreadyComplete {
			t.Fatalf("%d parts: stats %+v\nwant (single run) %+v", k, stats, single)
		}
		for j, ss := range stats.Splits {
			want := single.Splits[j]
			if ss.Split != want.Split || ss.Docs != want.Docs || ss.Bad != want.Bad || ss.Empty != want.Empty || ss.Tokens != want.Tokens ||
				ss.BadRecords.Bad() != want.BadRecords.Bad() {
				t.Fatalf("%d parts: split %d stats %+v\nwant %+v", k, j, ss, want)
			}
		}
		if probs, err := shards.Verify(ctx, dirStore(t, out), ""); err != nil || len(probs) > 0 {
			t.Fatalf("%d parts: verify: %v %v", k, probs, err)
		}
		var logged bytes.Buffer
		run.Logger = slog.New(slog.NewTextHandler(&logged, nil))
		again, stats, err := run.Run(ctx)
		if err != nil || !stats.AlreadyComplete || again.Documents != m.Documents || strings.Contains(logged.String(), "leave out") {
			t.Fatalf("%d parts, rerun: %v, stats %+v, log:\n%s", k, err, stats, logged.String())
		}
	}
}

// TestLocalPartsErrors: a part's error ends the run (the other parts stop), naming the
// file and line, not the others' cancellation; LocalParts with NumWorkers, or with fewer workers than parts, is refused.
func TestLocalPartsErrors(t *testing.T) {
	ctx := context.Background()
	splits := stripedCorpus(t, t.TempDir())
	run := stripedJob(t, splits, t.TempDir())
	run.SkipBad = false // every 29th line of every file is not JSON: the part that meets one first fails
	run.Workers, run.LocalParts = 4, 3
	if _, _, err := run.Run(ctx); err == nil || !regexp.MustCompile(`\.json[l.a-z]* line \d+: invalid JSON`).MatchString(err.Error()) || strings.Contains(err.Error(), "canceled") {
		t.Fatalf("a bad line: %v", err)
	}
	run = stripedJob(t, splits, t.TempDir())
	run.LocalParts, run.NumWorkers = 2, 2
	if _, _, err := run.Run(ctx); err == nil || !strings.Contains(err.Error(), "not both") {
		t.Fatalf("LocalParts with NumWorkers: %v", err)
	}
	run = stripedJob(t, splits, t.TempDir())
	run.Workers, run.LocalParts = 2, 3
	if _, _, err := run.Run(ctx); err == nil || !strings.Contains(err.Error(), "3 local parts for 2 workers") {
		t.Fatalf("more parts than workers: %v", err)
	}
}

func TestSuggestLocalParts(t *testing.T) {
	pile := make([]string, 30)
	for i := range pile {
		pile[i] = "train/" + string(rune('a'+i%26)) + ".jsonl.zst"
	}
	for _, tc := range []struct {
		inputs  []string
		workers int
		want    int
	}{
		{pile, 64, 13},
		{pile, 2, 1},
		{pile, 6, 2},
		{pile[:3], 64, 3},
		{[]string{"a.jsonl", "b.jsonl", "c.txt"}, 64, 1},
		{[]string{"a.jsonl.gz", "b.jsonl"}, 64, 1},
		{[]string{"a.jsonl.gz", "b.json.gz", "c.jsonl"}, 64, 2},
	} {
		if got := SuggestLocalParts(tc.inputs, tc.workers); got != tc.want {
			t.Errorf("SuggestLocalParts(%v, %d) = %d, want %d", tc.inputs, tc.workers, got, tc.want)
		}
	}
}

// TestLocalPartsResume: a run as local parts over a part an earlier run finished keeps
// that part (its shards counted as resumed) and gives a single run's documents and
// counts of records (the finished part's from its manifest). A finished part whose
// manifest does not keep them (an older gptkit) gets a warning that they are left out.
func TestLocalPartsResume(t *testing.T) {
	ctx := context.Background()
	splits := stripedCorpus(t, t.TempDir())
	ref := t.TempDir()
	_, single, err := stripedJob(t, splits, ref).Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, older := range []bool{false, true} {
		out := t.TempDir()
		if _, _, err := stripedPart(t, splits, out, 0, 2).Run(ctx); err != nil {
			t.Fatal(err)
		}
		if older {
			st, dir := dirStore(t, out), shards.PartDir(0, 2)
			pm, err := shards.ReadManifest(ctx, st, dir)
			if err != nil {
				t.Fatal(err)
			}
			pm.Records = nil
			if err := shards.WriteManifest(ctx, st, dir, pm); err != nil {
				t.Fatal(err)
			}
		}
		run := stripedJob(t, splits, out)
		run.Workers, run.LocalParts = 4, 2
		var logged bytes.Buffer
		run.Logger = slog.New(slog.NewTextHandler(&logged, nil))
		m, stats, err := run.Run(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if warned := strings.Contains(logged.String(), "leave out the parts an older gptkit finished"); warned != older {
			t.Errorf("older part manifest %v: warned that its record counts are left out: %v\n%s", older, warned, logged.String())
		}
		if got, want := splitDocs(t, dirStore(t, out), ""), splitDocs(t, dirStore(t, ref), ""); !reflect.DeepEqual(got, want) {
			t.Fatal("the documents differ from a single run's")
		}
		if stats.Docs != single.Docs || stats.Tokens != single.Tokens || stats.ResumedShards == 0 || stats.ResumedShards >= len(m.Shards) || stats.AlreadyComplete {
			t.Fatalf("stats %+v (%d shards), want %d documents, %d tokens, some shards resumed", stats, len(m.Shards), single.Docs, single.Tokens)
		}
		if !older && (stats.Bad != single.Bad || stats.Empty != single.Empty || stats.InvalidUTF8 != single.InvalidUTF8) {
			t.Fatalf("%d bad, %d empty, %d invalid UTF-8 records; a single run counted %d, %d, %d", stats.Bad, stats.Empty, stats.InvalidUTF8, single.Bad, single.Empty, single.InvalidUTF8)
		}
		for j, ss := range stats.Splits {
			if ss.Split != single.Splits[j].Split {
				t.Fatalf("split %d is %q, want %q", j, ss.Split, single.Splits[j].Split)
			}
		}
	}
}

// TestRerunKeepsRecordCounts: a rerun that finds the dataset complete reports the first
// run's counts of bad and empty records, by split and by reason, from its manifest;
// with a manifest that does not keep them (an older gptkit), RecordsUnknown.
func TestRerunKeepsRecordCounts(t *testing.T) {
	ctx := context.Background()
	splits := stripedCorpus(t, t.TempDir())
	out := t.TempDir()
	_, first, err := stripedJob(t, splits, out).Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	_, again, err := stripedJob(t, splits, out).Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !again.AlreadyComplete || again.RecordsUnknown || again.Bad != first.Bad || again.Empty != first.Empty || again.Docs != first.Docs || len(again.Splits) != len(first.Splits) {
		t.Fatalf("rerun stats %+v, want the first run's counts (%d bad, %d empty)", again, first.Bad, first.Empty)
	}
	for i, ss := range again.Splits {
		fs := first.Splits[i]
		if ss.Split != fs.Split || ss.Bad != fs.Bad || ss.Empty != fs.Empty || ss.BadRecords == nil || fs.BadRecords == nil || !maps.Equal(ss.BadRecords.Counts, fs.BadRecords.Counts) {
			t.Fatalf("split %d: rerun %+v, first %+v", i, ss, fs)
		}
	}
	st := dirStore(t, out)
	m, err := shards.ReadManifest(ctx, st, "")
	if err != nil {
		t.Fatal(err)
	}
	m.Records = nil
	if err := shards.WriteManifest(ctx, st, "", m); err != nil {
		t.Fatal(err)
	}
	if _, old, err := stripedJob(t, splits, out).Run(ctx); err != nil || !old.AlreadyComplete || !old.RecordsUnknown || old.Bad != 0 {
		t.Fatalf("rerun over a manifest without records: %+v, %v; want RecordsUnknown", old, err)
	}
}

// TestManifestStatsTruncated: a finished dataset's truncated streams come back from its
// manifest, but not the bytes not read after them, which the summary then leaves out
// (or gives as a lower bound beside a part that knows its own).
func TestManifestStatsTruncated(t *testing.T) {
	m := &shards.Manifest{Records: []shards.SplitRecords{{Split: "", Truncated: 2, BadReasons: map[string]int64{"corrupt": 2}}}}
	s := ManifestStats(m)
	if s.Truncated != 2 || !s.UnreadUnknown || s.UnreadBytes != 0 {
		t.Fatalf("ManifestStats: %+v", s)
	}
	sum := s.Summary("ds", "")
	if !strings.Contains(sum, "truncated: 2 damaged compressed streams kept up to the damage (--accept-truncated)\n") {
		t.Fatalf("summary:\n%s", sum)
	}
	s.UnreadBytes = 100 // and a part run now that read around its damage
	if sum := s.Summary("ds", ""); !strings.Contains(sum, "; at least 100 bytes of the files not read") {
		t.Fatalf("summary with a known part:\n%s", sum)
	}
	known := RunStats{Truncated: 1, UnreadBytes: 7}
	if sum := known.Summary("ds", ""); !strings.Contains(sum, "; 7 bytes of the files not read") {
		t.Fatalf("summary of a run that read its inputs:\n%s", sum)
	}
}
