package shards

import (
	"context"
	"errors"
	"os"
	"slices"
	"strings"
	"testing"
)

// TestMergePartsOverwriteRemovesReplaced: merge-parts --overwrite over a dataset
// removes, once the new manifest is written, the old dataset's shard files that the
// new manifest does not use, and nothing else: not files the old manifest did not
// list, not before the new manifest is committed (a failed write leaves the old
// dataset whole). They stayed, and `shards verify` warned about them.
func TestMergePartsOverwriteRemovesReplaced(t *testing.T) {
	ctx := context.Background()
	st := newTestStore(t)
	writeDataset(t, st, "ds", testTokenizer(65536), Uint16, [][]int{{9}}, [][]int{{8, 8}})
	os.WriteFile(st.path("ds/notes.txt"), []byte("mine"), 0o644)
	writeShard(t, st, "ds/other_text_document", Uint16, [][]int{{7}}) // not the old dataset's
	writePart(t, st, "ds", 0, 1, "j", map[string][][]int{"": {{1}}})
	before := st.keys(t)

	st.failCommit = ManifestName
	if _, err := MergeParts(ctx, st, "ds", MergePartsOptions{Overwrite: true}); !errors.Is(err, errInjected) {
		t.Fatalf("merge with the manifest's commit failing: %v", err)
	}
	if after := st.keys(t); !slices.Equal(after, before) {
		t.Fatalf("a failed overwrite changed the files:\n%v\nwant\n%v", after, before)
	}
	st.failCommit = ""

	res, err := MergeParts(ctx, st, "ds", MergePartsOptions{Overwrite: true})
	if err != nil || res.RemoveErr != nil {
		t.Fatalf("overwrite: %v %v", err, res.RemoveErr)
	}
	gone := []string{"ds/part0_text_document.bin", "ds/part0_text_document.idx", "ds/part1_text_document.bin", "ds/part1_text_document.idx"}
	if !slices.Equal(res.Removed, gone) {
		t.Errorf("removed %v, want %v", res.Removed, gone)
	}
	want := slices.DeleteFunc(before, func(k string) bool { return slices.Contains(gone, k) })
	if after := st.keys(t); !slices.Equal(after, want) {
		t.Errorf("files after the overwrite:\n%v\nwant\n%v", after, want)
	}
	probs, err := Verify(ctx, st, "ds")
	for _, p := range probs {
		if !p.Warning || !strings.Contains(p.File, "other_text_document") {
			t.Errorf("verify: %v", p.Err)
		}
	}
	if err != nil {
		t.Fatal(err)
	}
}

// TestMergePartsOverwriteRemovesReplacedParts: over the merged dataset of another
// run, the shards and manifests of that run's parts go; a part directory of the old
// run that a later run's part has taken over keeps its files, and the new run's
// files all stay.
func TestMergePartsOverwriteRemovesReplacedParts(t *testing.T) {
	ctx := context.Background()
	st := newTestStore(t)
	one := map[string][][]int{"": {{1}}, "val": {{2}}}
	writePart(t, st, "ds", 0, 2, "a", one)
	writePart(t, st, "ds", 1, 2, "a", one)
	if _, err := MergeParts(ctx, st, "ds", MergePartsOptions{}); err != nil {
		t.Fatal(err)
	}
	// Part 1 of 2 rerun by another run since (its --overwrite replaced the part).
	os.Remove(st.path(ManifestKey(join("ds", PartDir(1, 2)))))
	writePart(t, st, "ds", 1, 2, "c", one)
	for i := range 3 {
		writePart(t, st, "ds", i, 3, "b", one)
	}
	res, err := MergeParts(ctx, st, "ds", MergePartsOptions{Count: 3, Overwrite: true})
	if err != nil || res.RemoveErr != nil {
		t.Fatalf("overwrite: %v %v", err, res.RemoveErr)
	}
	p0 := "ds/" + PartDir(0, 2) + "/"
	gone := []string{p0 + "manifest.json", p0 + "d_text_document.bin", p0 + "d_text_document.idx", p0 + "d_valtext_document.bin", p0 + "d_valtext_document.idx"}
	if !slices.Equal(res.Removed, gone) {
		t.Errorf("removed %v, want %v", res.Removed, gone)
	}
	for _, k := range st.keys(t) {
		if strings.HasPrefix(k, p0) {
			t.Errorf("%s is left", k)
		}
	}
	if _, err := ReadManifest(ctx, st, join("ds", PartDir(1, 2))); err != nil {
		t.Errorf("the part of run c: %v", err)
	}
	if probs, err := Verify(ctx, st, join("ds", PartDir(1, 2))); err != nil || len(probs) != 0 {
		t.Errorf("verify the part of run c: %v %v", probs, err)
	}
	if probs, err := Verify(ctx, st, "ds"); err != nil || len(probs) != 0 {
		t.Errorf("verify: %v %v", probs, err)
	}
	// Merging the same parts over it again removes nothing.
	if res, err := MergeParts(ctx, st, "ds", MergePartsOptions{Count: 3, Overwrite: true}); err != nil || len(res.Removed) != 0 {
		t.Errorf("merge again: removed %v, %v", res.Removed, err)
	}
}
