package spec

import (
	"fmt"

	"gptkit/tokenize"
	"gptkit/tokenize/embedded/compiled"
)

// loadEmbedded loads named from its compiled form embedded in the binary (package
// tokenize/embedded/compiled): no cache, no network, and no parse of the publisher's files, so a
// named tokenizer loads in milliseconds (docs/tokenizer-performance.md).
func loadEmbedded(named namedTokenizer) (*tokenize.Tokenizer, error) {
	data, err := compiled.Read(named.cacheDir)
	if err != nil {
		return nil, fmt.Errorf("spec: %s: %w", named.name, err)
	}
	tok, err := tokenize.LoadCompiled(data, named.name)
	if err != nil {
		return nil, fmt.Errorf("spec: load the embedded %s: %w", named.name, err)
	}
	return tok, nil
}

// FromFiles builds the named tokenizer from the publisher's files, which read returns
// by directory and name (embedded.Read: tokenize/embedded, which only the generator and
// the tests import, so that the binaries do not carry them), parsing them: what its
// compiled form is made from (go generate in tokenize/embedded/compiled) and checked
// against. Load is the fast way to the same tokenizer.
func FromFiles(name string, read func(dir, file string) ([]byte, error)) (*tokenize.Tokenizer, error) {
	named, ok := lookupName(name)
	if !ok || named.build == nil {
		return nil, fmt.Errorf("spec: %q is not a tokenizer built from files", name)
	}
	contents := make([][]byte, len(named.files))
	for i, file := range named.files {
		data, err := read(named.cacheDir, file.name)
		if err != nil {
			return nil, fmt.Errorf("spec: %s: %w", named.name, err)
		}
		contents[i] = data
	}
	tok, err := named.build(contents, named.name)
	if err != nil {
		return nil, fmt.Errorf("spec: build %s from its embedded files: %w", named.name, err)
	}
	return tok, nil
}

// EmbeddedDirs lists the directories of tokenize/embedded and, for each, a name whose
// files it holds (gpt2 and r50k_base share one).
func EmbeddedDirs() (dirs, names []string) {
	for _, n := range namedTokenizers {
		if n.build != nil && !contains(dirs, n.cacheDir) {
			dirs, names = append(dirs, n.cacheDir), append(names, n.name)
		}
	}
	return dirs, names
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}
