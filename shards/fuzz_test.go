package shards

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// FuzzReadIdx: ParseIndex never panics and returns only *FormatErrors; what it accepts
// re-encodes to the same bytes and every entry it exposes is in range.
func FuzzReadIdx(f *testing.F) {
	for _, name := range []string{"neox_u16", "neox_i32", "neox_multi_u16", "neox_merged_u16"} {
		data, err := os.ReadFile(golden(name + ".idx"))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data, false)
		f.Add(data, true)
		f.Add(data[:len(data)/2], false)
	}
	f.Add(validIdx(), false)
	f.Add(rawIdx(1, 8, 1<<62, 1, nil, nil, []int64{0}), false)
	f.Add([]byte{}, false)
	f.Fuzz(func(t *testing.T, data []byte, allowMerged bool) {
		var opts []Option
		if allowMerged {
			opts = append(opts, AllowMergedDocIdx())
		}
		ix, err := ParseIndex("fuzz.idx", data, opts...)
		if err != nil {
			var fe *FormatError
			if !errors.As(err, &fe) {
				t.Fatalf("error %v is not a *FormatError", err)
			}
			return
		}
		if got := reencode(t, ix); !bytes.Equal(got, data) {
			t.Fatalf("accepted index does not round-trip")
		}
		var sum int64
		for i := 0; i < ix.Len(); i++ {
			if ix.Size(i) < 0 || ix.Pointer(i) != sum*int64(ix.DType().Size()) {
				t.Fatalf("entry %d inconsistent", i)
			}
			sum += int64(ix.Size(i))
		}
		if sum != ix.NumTokens() {
			t.Fatalf("NumTokens %d, sizes add to %d", ix.NumTokens(), sum)
		}
		_ = ix.CheckBinSize("fuzz.bin", ix.BinSize())
	})
}

// FuzzParseManifest: ParseManifest never panics and fails only with ErrBadManifest;
// what it accepts is valid, and written out and parsed again it is the same manifest
// (records included).
func FuzzParseManifest(f *testing.F) {
	good := NewManifest(TokenizerInfo{Name: "gpt2", Fingerprint: "f", VocabSize: 50257, EODID: 50256}, Uint16, map[string]any{"job": "j"})
	good.Add("", ShardInfo{Prefix: "a", Documents: 2, Tokens: 5, BinSHA256: strings.Repeat("a", 64), IdxSHA256: strings.Repeat("b", 64)})
	good.Records = []SplitRecords{{Empty: 1, Bad: 2, BadReasons: map[string]int64{"invalid_json": 2}}, {Split: "val", Filtered: 3}}
	seed, _ := json.Marshal(good)
	f.Add(seed)
	f.Add([]byte(`{"format":"gptkit-shards","version":1,"records":[{"split":"../x","bad":-1}],"shards":[]}`))
	f.Add([]byte(`{"records":null}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := ParseManifest("manifest.json", data)
		if err != nil {
			if !errors.Is(err, ErrBadManifest) {
				t.Fatalf("error %v is not ErrBadManifest", err)
			}
			return
		}
		if err := m.Validate(); err != nil {
			t.Fatalf("accepted a manifest that does not validate: %v", err)
		}
		out, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		again, err := ParseManifest("manifest.json", out)
		if err != nil {
			t.Fatalf("its own output does not parse: %v\n%s", err, out)
		}
		if !reflect.DeepEqual(normalRecords(m.Records), normalRecords(again.Records)) || m.Documents != again.Documents || len(m.Shards) != len(again.Shards) {
			t.Fatalf("parsed again: records %+v, want %+v", again.Records, m.Records)
		}
	})
}

// normalRecords makes empty bad_reasons maps nil (omitempty writes neither).
func normalRecords(rs []SplitRecords) []SplitRecords {
	out := slices.Clone(rs)
	for i := range out {
		if len(out[i].BadReasons) == 0 {
			out[i].BadReasons = nil
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}
