package shards

import (
	"context"
	"errors"
	"testing"
)

// TestWriterStreamed: a document streamed in pieces is the document AddDocument
// writes; AddDocument and Close refuse while one is open; an id that does not fit
// mid-stream is sticky (part of the document is in the .bin already).
func TestWriterStreamed(t *testing.T) {
	ctx := context.Background()
	st := newTestStore(t)
	w, err := NewWriter(ctx, st, "s", Uint16)
	if err != nil {
		t.Fatal(err)
	}
	for _, part := range [][]int{{1, 2}, nil, {3}} {
		if err := w.appendStreamed(part); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.AddDocument([]int{9}); err == nil {
		t.Fatal("AddDocument while a document is streamed")
	}
	if err := w.endStreamed(); err != nil {
		t.Fatal(err)
	}
	if err := w.endStreamed(); err != nil { // none open: nothing
		t.Fatal(err)
	}
	if err := w.AddDocument([]int{4}); err != nil {
		t.Fatal(err)
	}
	got, err := w.Close()
	if err != nil {
		t.Fatal(err)
	}
	if want := writeShard(t, st, "ref", Uint16, [][]int{{1, 2, 3}, {4}}); got.BinSHA256 != want.BinSHA256 || got.IdxSHA256 != want.IdxSHA256 {
		t.Fatalf("streamed %+v, want %+v", got, want)
	}

	w, _ = NewWriter(ctx, st, "bad", Uint16)
	w.appendStreamed([]int{1})
	if err := w.appendStreamed([]int{2, 70000}); !errors.Is(err, ErrTokenRange) {
		t.Fatalf("id 70000 in uint16: %v", err)
	}
	if _, err := w.Close(); !errors.Is(err, ErrTokenRange) {
		t.Fatalf("close after a bad streamed id: %v", err)
	}
	w, _ = NewWriter(ctx, st, "open", Uint16)
	w.appendStreamed([]int{1})
	if _, err := w.Close(); err == nil {
		t.Fatal("Close with a document still streamed")
	}
	if k := st.keys(t); len(k) != 4 { // s and ref
		t.Fatalf("keys %v", k)
	}
}
