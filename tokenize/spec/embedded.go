package spec

import (
	"fmt"

	"gptkit/tokenize"
	"gptkit/tokenize/embedded"
)

// loadEmbedded builds named from its files compiled into the binary (package
// tokenize/embedded): no cache and no network.
func loadEmbedded(named namedTokenizer) (*tokenize.Tokenizer, error) {
	contents := make([][]byte, len(named.files))
	for i, file := range named.files {
		data, err := embedded.Read(named.cacheDir, file.name)
		if err != nil {
			return nil, fmt.Errorf("spec: %s: %w", named.name, err)
		}
		contents[i] = data
	}
	tok, err := named.build(contents, named.name)
	if err != nil {
		return nil, fmt.Errorf("spec: load the embedded %s: %w", named.name, err)
	}
	return tok, nil
}
