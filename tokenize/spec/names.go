package spec

import (
	"gptkit/tokenize"
)

// remoteFile is one file of a named tokenizer.
type remoteFile struct {
	name   string // file name in the cache directory; for several files, also the suffix appended to Options.URL
	url    string // canonical URL
	sha256 string // hex sha256 of the canonical file
}

// namedTokenizer is a tokenizer known by name, built from files fetched into the cache.
type namedTokenizer struct {
	name     string
	cacheDir string // subdirectory of the cache root holding files
	files    []remoteFile
	// build makes the tokenizer from the contents of files, in order. Nil for a
	// tokenizer that needs no file.
	build func(contents [][]byte, name string) (*tokenize.Tokenizer, error)
	// vocabSize is the built tokenizer's VocabSize (TestBuiltinVocabSizes): a
	// tokenizer of another size is not a copy of it, told without loading it (asBuiltin).
	vocabSize int
}

var gpt2Files = []remoteFile{
	{
		name:   "vocab.json",
		url:    "https://huggingface.co/openai-community/gpt2/resolve/main/vocab.json",
		sha256: "3ba3c3109ff33976c4bd966589c11ee14fcaa1f4c9e5e154c2ed7f99d80709e7",
	},
	{
		name:   "merges.txt",
		url:    "https://huggingface.co/openai-community/gpt2/resolve/main/merges.txt",
		sha256: "1ce1664773c50f3e0cc8842619a93edc4624525b728b188a9e0be33b7726adc5",
	},
}

func buildVocabMerges(contents [][]byte, name string) (*tokenize.Tokenizer, error) {
	return tokenize.LoadVocabMerges(contents[0], contents[1], name)
}

func buildHFJSON(contents [][]byte, name string) (*tokenize.Tokenizer, error) {
	return tokenize.LoadHFJSON(contents[0], name)
}

func buildTiktoken(contents [][]byte, name string) (*tokenize.Tokenizer, error) {
	return tokenize.LoadTiktoken(contents[0], name)
}

// namedTokenizers lists the names Load knows, in the order Names reports them.
var namedTokenizers = []namedTokenizer{
	{name: "gpt2", cacheDir: "gpt2", files: gpt2Files, build: buildVocabMerges, vocabSize: 50257},
	{name: "r50k_base", cacheDir: "gpt2", files: gpt2Files, build: buildVocabMerges, vocabSize: 50257},
	{
		name:     "neox-20b",
		cacheDir: "neox-20b",
		files: []remoteFile{{
			name:   "tokenizer.json",
			url:    "https://huggingface.co/EleutherAI/gpt-neox-20b/resolve/main/tokenizer.json",
			sha256: "56ac4821e129d2c520fdaba60abd920fa852ada51b45c0dd52bbb6bd8c985ade",
		}},
		build:     buildHFJSON,
		vocabSize: 50277,
	},
	{
		name:     "cl100k_base",
		cacheDir: "cl100k_base",
		files: []remoteFile{{
			name:   "cl100k_base.tiktoken",
			url:    "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken",
			sha256: "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
		}},
		build:     buildTiktoken,
		vocabSize: 100277,
	},
	{
		name:     "o200k_base",
		cacheDir: "o200k_base",
		files: []remoteFile{{
			name:   "o200k_base.tiktoken",
			url:    "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken",
			sha256: "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
		}},
		build:     buildTiktoken,
		vocabSize: 200019,
	},
	{name: "char"},
}

// Names lists the tokenizer names Load resolves without a path.
func Names() []string {
	names := make([]string, len(namedTokenizers))
	for i, n := range namedTokenizers {
		names[i] = n.name
	}
	return names
}

func lookupName(name string) (namedTokenizer, bool) {
	for _, n := range namedTokenizers {
		if n.name == name {
			return n, true
		}
	}
	return namedTokenizer{}, false
}
