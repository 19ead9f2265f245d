package spec

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"slices"
	"strings"
	"sync"

	"gptkit/tokenize"
)

// builtinPrint is a built-in tokenizer's name and fingerprint.
type builtinPrint struct{ name, fingerprint string }

// builtinFingerprint returns the fingerprint of the built-in named (one built from files),
// from its embedded copy, loaded on the first call for that name (a few to some 30 ms
// each); callers ask only for the built-ins of the size of the tokenizer at hand.
func builtinFingerprint(named namedTokenizer) string {
	builtinPrintsMu.Lock()
	defer builtinPrintsMu.Unlock()
	if fp, ok := builtinPrintsByName[named.name]; ok {
		return fp
	}
	fp := ""
	if tok, err := loadEmbedded(named); err == nil {
		fp = tok.Fingerprint()
	}
	builtinPrintsByName[named.name] = fp
	return fp
}

var (
	builtinPrintsMu     sync.Mutex
	builtinPrintsByName = map[string]string{}
)

// builtinPrints are the names and fingerprints of the built-in tokenizers built from
// files whose vocabulary has vocabSize tokens, in Names' order (gpt2 before r50k_base,
// which share one): a tokenizer of another size is none of them, so a trained
// tokenizer given by path loads no built-in to be told apart (all five took some
// 100 ms).
func builtinPrints(vocabSize int) []builtinPrint {
	var prints []builtinPrint
	for _, named := range namedTokenizers {
		if named.build == nil || named.vocabSize != vocabSize {
			continue
		}
		if fp := builtinFingerprint(named); fp != "" {
			prints = append(prints, builtinPrint{named.name, fp})
		}
	}
	return prints
}

// builtinOr passes a loader's result on, as the built-in it is: asBuiltin, and for
// the .tiktoken rank file file, tiktokenAsBuiltin. (Not for the files stored beside a
// dataset, which spec.ForDataset reads as they are: an older dataset's manifest records
// the fingerprint its r50k_base.tiktoken had.)
func builtinOr(file string) func(*tokenize.Tokenizer, error) (*tokenize.Tokenizer, error) {
	return func(tok *tokenize.Tokenizer, err error) (*tokenize.Tokenizer, error) {
		if err != nil {
			return nil, err
		}
		if strings.HasSuffix(file, tiktokenExt) {
			tok = tiktokenAsBuiltin(tok, tok.Name())
		}
		return asBuiltin(tok), nil
	}
}

// asBuiltin is the built-in tokenizer that tok, loaded from a path or a download, is
// (its fingerprint: a copy of the publisher's files), else tok. A dataset made with it
// then records the built-in's name, which its readers load by name (spec.ForDataset),
// so that nothing is stored beside it; tok's own name is kept where it is a built-in's
// of that fingerprint (r50k_base rather than gpt2).
func asBuiltin(tok *tokenize.Tokenizer) *tokenize.Tokenizer {
	var match string
	for _, p := range builtinPrints(tok.VocabSize()) {
		if p.fingerprint == tok.Fingerprint() && (match == "" || p.name == tok.Name()) {
			match = p.name
		}
	}
	if match == "" || match == tok.Name() {
		return tok
	}
	named, _ := lookupName(match)
	if b, err := loadEmbedded(named); err == nil && b.Fingerprint() == tok.Fingerprint() {
		return b
	}
	return tok
}

// tiktokenAsBuiltin is the built-in gpt2 or r50k_base (encoding) where tok, loaded
// from the .tiktoken rank file of that encoding, is a copy of the one OpenAI publishes
// (r50k_base.tiktoken, sha256 306cd27f...: GPT-2's vocabulary, each token's rank its
// id): the same ids for every text as the built-in, which is built from GPT-2's
// vocab.json and merges.txt and so has another fingerprint. Else tok.
func tiktokenAsBuiltin(tok *tokenize.Tokenizer, encoding string) *tokenize.Tokenizer {
	if encoding != "gpt2" && encoding != "r50k_base" {
		return tok
	}
	named, _ := lookupName(encoding)
	b, err := loadEmbedded(named)
	if err != nil || b.VocabSize() != tok.VocabSize() || b.EOD() != tok.EOD() || !slices.Equal(b.AddedTokens(), tok.AddedTokens()) {
		return tok
	}
	for id := range b.VocabSize() {
		if !bytes.Equal(b.TokenBytes(id), tok.TokenBytes(id)) {
			return tok
		}
	}
	return b
}

// IsBuiltin reports whether tok is the built-in tokenizer of its name (that name's
// fingerprint), which a dataset's readers load by the name its manifest records: its
// files need not be stored beside the data.
func IsBuiltin(tok *tokenize.Tokenizer) bool {
	if tok.Kind() == tokenize.KindByteChar {
		return tok.Name() == "char"
	}
	for _, p := range builtinPrints(tok.VocabSize()) {
		if p.name == tok.Name() && p.fingerprint == tok.Fingerprint() {
			return true
		}
	}
	return false
}

// EarlierFingerprint is the fingerprint tok, the built-in gpt2 or r50k_base, had when
// loaded from OpenAI's .tiktoken rank file of its name before Load took that file for
// the built-in (88c3dbf): the fingerprint a dataset made with it then records, in its
// manifest and job. "" for any other tokenizer.
func EarlierFingerprint(tok *tokenize.Tokenizer) string {
	if (tok.Name() != "gpt2" && tok.Name() != "r50k_base") || !IsBuiltin(tok) {
		return ""
	}
	var ranks bytes.Buffer
	for id := range tok.EOD() {
		fmt.Fprintf(&ranks, "%s %d\n", base64.StdEncoding.EncodeToString(tok.TokenBytes(id)), id)
	}
	t, err := tokenize.LoadTiktoken(ranks.Bytes(), tok.Name())
	if err != nil || t.Fingerprint() == tok.Fingerprint() {
		return ""
	}
	return t.Fingerprint()
}
