package prep

import "strings"

// Corpus is a corpus that `prep NAME` can download, as listed by `prep list`.
type Corpus struct {
	Name        string   // what `prep NAME` takes, e.g. "pile-00"
	Aliases     []string // other names accepted, e.g. GPT-NeoX's "pile_subset"
	Description string   // one line
	Files       []CorpusFile
	// DefaultTokenizer is the tokenizer SPEC used when --tokenizer is not given:
	// "gpt2", or "char" for tiny Shakespeare.
	DefaultTokenizer string
	Notes            string // availability, licensing and layout remarks, for people
	// DerivedSplits are splits prep cuts from the files rather than downloads (tiny
	// Shakespeare's val: the last 10% of the text); Splits lists them after the files'.
	DerivedSplits []string
}

// CorpusFile is one file of a Corpus.
type CorpusFile struct {
	// Name is the file's relative name, with forward slashes: under --mirror BASE it
	// is at BASE/Name, in SHA256SUMS and --checksums it is listed as Name, and it is
	// downloaded to DIR/downloads/Name.
	Name  string
	Split string // "train", "val" or "test"
	// Sources are where the file can be downloaded from, tried in order: known-good
	// mirrors first, then the original. Each URL ends in "/" + Name, so the part
	// before it is also a valid --mirror BASE.
	Sources []Source
	Size    int64  // bytes; 0 means unknown
	SHA256  string // lower-case hex; "" means unknown
	// Embedded, if set, returns the file's content compiled into the binary (tiny
	// Shakespeare): prep writes it instead of downloading, unless asked to download.
	Embedded func() ([]byte, error)
}

// Source is one URL a CorpusFile can be downloaded from.
type Source struct {
	URL string
	// Verified is true only where the catalog pins the file's sha256 and that sha256
	// was computed from a known copy of the bytes this URL serves (tiny Shakespeare:
	// the project's shared copy). No URL was fetched when the catalog was written (the
	// build machine is offline): the original hosts are reported dead (GPT-NeoX issues
	// #909, #1071, #949) and the mirrors are leads from their Hugging Face pages.
	// What comes from an unverified source is checked only against its size and
	// sha256 when SHA256SUMS or --checksums supply them.
	Verified bool
	Note     string // e.g. "original host, reported dead"
}

// Catalog returns the corpora `prep NAME` knows, in the order `prep list` shows them.
// Each call returns a fresh copy that the caller may change.
func Catalog() []Corpus {
	return []Corpus{pileCorpus(), pile00Corpus(), enronCorpus(), enwik8Corpus(), shakespeareCorpus()}
}

// LookupCorpus returns the corpus named name (or with name as an alias), ignoring case.
func LookupCorpus(name string) (Corpus, bool) {
	name = strings.TrimSpace(name)
	for _, c := range Catalog() {
		if strings.EqualFold(c.Name, name) {
			return c, true
		}
		for _, a := range c.Aliases {
			if strings.EqualFold(a, name) {
				return c, true
			}
		}
	}
	return Corpus{}, false
}

// CorpusNames returns the names (not the aliases) of the catalog's corpora, in order.
func CorpusNames() []string {
	var names []string
	for _, c := range Catalog() {
		names = append(names, c.Name)
	}
	return names
}

// TotalSize returns the sum of the corpus's file sizes, and whether every size is known.
func (c Corpus) TotalSize() (int64, bool) {
	var total int64
	known := true
	for _, f := range c.Files {
		total += f.Size
		known = known && f.Size > 0
	}
	return total, known
}

// Splits returns the splits the corpus's files belong to, in order of first appearance,
// then its DerivedSplits.
func (c Corpus) Splits() []string {
	splits := c.fileSplits()
	return append(splits, c.DerivedSplits...)
}

// fileSplits returns the splits the corpus's files belong to, in order of first appearance.
func (c Corpus) fileSplits() []string {
	var splits []string
	for _, f := range c.Files {
		found := false
		for _, s := range splits {
			found = found || s == f.Split
		}
		if !found {
			splits = append(splits, f.Split)
		}
	}
	return splits
}

// Embedded reports whether every file of the corpus is compiled into the binary.
func (c Corpus) Embedded() bool {
	for _, f := range c.Files {
		if f.Embedded == nil {
			return false
		}
	}
	return len(c.Files) > 0
}

// HasVerifiedSource reports whether every file has at least one verified source.
func (c Corpus) HasVerifiedSource() bool {
	for _, f := range c.Files {
		ok := false
		for _, s := range f.Sources {
			ok = ok || s.Verified
		}
		if !ok {
			return false
		}
	}
	return len(c.Files) > 0
}
