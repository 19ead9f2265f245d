package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"gptkit/internal/testfiles"
	"gptkit/tokenize"
)

// exportVariant trains on a dataset made with GPT-2's tokenizer.json edited by
// edit (the file stored beside the data) and exports; it returns the tokenizer and the
// export directory.
func exportVariant(t *testing.T, edit func(m map[string]any)) (*tokenize.Tokenizer, string) {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(testfiles.Read(t, "tokenizers/gpt2/tokenizer.json"), &m); err != nil {
		t.Fatal(err)
	}
	edit(m)
	raw, _ := json.Marshal(m)
	tok, err := tokenize.LoadHFJSON(raw, "variant")
	if err != nil {
		t.Fatal(err)
	}
	data := makeTokenDataset(t, tok, charText(6000))
	if err := os.WriteFile(filepath.Join(data, "tokenizer.json"), raw, 0o644); err != nil {
		t.Fatal(err)
	}
	_, hf := trainAndExport(t, data)
	return tok, hf
}

func readJSONFile(t *testing.T, path string, v any) {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err == nil {
		err = json.Unmarshal(raw, v)
	}
	if err != nil {
		t.Fatal(err)
	}
}

// A tokenizer with add_prefix_space=true: transformers' PreTrainedTokenizerFast
// (4.x) resets the ByteLevel pre-tokenizer's add_prefix_space to the
// tokenizer_config.json's add_prefix_space kwarg, False when absent.
func TestExportVariantAddPrefixSpace(t *testing.T) {
	_, hf := exportVariant(t, func(m map[string]any) {
		m["pre_tokenizer"].(map[string]any)["add_prefix_space"] = true
	})
	var tc map[string]any
	readJSONFile(t, filepath.Join(hf, "tokenizer_config.json"), &tc)
	if tc["add_prefix_space"] != true {
		t.Errorf("tokenizer_config.json has no add_prefix_space=true for an add_prefix_space tokenizer: %v", tc)
	}
}

// An end-of-document token that is a vocabulary token but no added token: the config
// names it bos/eos/unk, so transformers adds it as a special token, and the text
// "<|endoftext|>" then encodes to one id there and to seven here.
func TestExportVariantEOSNotAdded(t *testing.T) {
	tok, hf := exportVariant(t, func(m map[string]any) { m["added_tokens"] = []any{} })
	var tc map[string]any
	readJSONFile(t, filepath.Join(hf, "tokenizer_config.json"), &tc)
	var tj struct {
		AddedTokens []struct{ Content string } `json:"added_tokens"`
	}
	readJSONFile(t, filepath.Join(hf, "tokenizer.json"), &tj)
	eos, _ := tc["eos_token"].(string)
	added := slices.ContainsFunc(tj.AddedTokens, func(a struct{ Content string }) bool { return a.Content == eos })
	if eos != "" && !added {
		t.Errorf("tokenizer_config.json eos_token %q is no added token of tokenizer.json; our Encode(%q) = %v (EOD %d)", eos, eos, tok.Encode(eos), tok.EOD())
	}
}

// The NeoX byte tokenizer ("char") is left out with a warning of its own, not one that
// calls it a tiktoken rank file.
func TestExportVariantNeoXCharMessage(t *testing.T) {
	err := tokenize.NewNeoXChar().WriteHFJSON(&strings.Builder{})
	if err != nil && strings.Contains(err.Error(), "tiktoken") {
		t.Errorf("NeoX char tokenizer: %v", err)
	}
}
