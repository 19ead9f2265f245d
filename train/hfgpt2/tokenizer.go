package hfgpt2

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"

	"gptkit/internal/durable"
)

// File names of a Hugging Face tokenizer beside the model.
const (
	TokenizerName       = "tokenizer.json"
	TokenizerConfigName = "tokenizer_config.json"
)

// TokenizerConfig is what tokenizer_config.json says beside tokenizer.json.
type TokenizerConfig struct {
	// EOS is the content of the end-of-document token, an added token of
	// tokenizer.json ("" for none: transformers would add a token it names as a new
	// special token, which the text then encodes to where the tokenizer did not):
	// transformers' bos, eos and unk token, as GPT-2's files set them.
	EOS string
	// ModelMaxLength is the model's context (block_size).
	ModelMaxLength int
	// AddPrefixSpace is the ByteLevel pre-tokenizer's: PreTrainedTokenizerFast
	// (transformers 4.x) rebuilds the pre-tokenizer with tokenizer_config.json's value,
	// false when absent.
	AddPrefixSpace bool
}

// hfTokenizerConfig is tokenizer_config.json: transformers' AutoTokenizer loads
// tokenizer.json as a PreTrainedTokenizerFast, told the pre-tokenizer's add_prefix_space
// (transformers 4.x rebuilds the pre-tokenizer from this value), and decodes without
// clean_up_tokenization_spaces (which would join " ." to ".": not the text).
type hfTokenizerConfig struct {
	TokenizerClass            string `json:"tokenizer_class"`
	ModelMaxLength            int    `json:"model_max_length"`
	CleanUpTokenizationSpaces bool   `json:"clean_up_tokenization_spaces"`
	AddPrefixSpace            bool   `json:"add_prefix_space"`
	BOSToken                  string `json:"bos_token,omitempty"`
	EOSToken                  string `json:"eos_token,omitempty"`
	UNKToken                  string `json:"unk_token,omitempty"`
}

// WriteTokenizer writes dir/tokenizer.json (tokenizerJSON, as tokenize's WriteHFJSON
// makes it) and dir/tokenizer_config.json, so that transformers'
// AutoTokenizer.from_pretrained(dir) and pipeline("text-generation", model=dir) find
// the model's tokenizer. dir must exist; the files are replaced, each whole or not at
// all (durable.WriteFile).
func WriteTokenizer(dir string, tokenizerJSON []byte, c TokenizerConfig) error {
	tc := hfTokenizerConfig{TokenizerClass: "PreTrainedTokenizerFast", ModelMaxLength: c.ModelMaxLength, AddPrefixSpace: c.AddPrefixSpace,
		BOSToken: c.EOS, EOSToken: c.EOS, UNKToken: c.EOS}
	var cj bytes.Buffer
	enc := json.NewEncoder(&cj)
	enc.SetEscapeHTML(false) // "<|endoftext|>" as it is, not \u003c|endoftext|\u003e
	enc.SetIndent("", "  ")
	if err := enc.Encode(tc); err != nil {
		return fmt.Errorf("hfgpt2: tokenizer: %w", err)
	}
	if err := durable.WriteFile(filepath.Join(dir, TokenizerName), tokenizerJSON, 0o644); err != nil {
		return fmt.Errorf("hfgpt2: tokenizer: %w", err)
	}
	if err := durable.WriteFile(filepath.Join(dir, TokenizerConfigName), cj.Bytes(), 0o644); err != nil {
		return fmt.Errorf("hfgpt2: tokenizer: %w", err)
	}
	return nil
}
