package prep

import (
	"fmt"

	"gptkit/internal/tinyshakespeare"
)

// The catalog's entries. URLs, names and counts come from GPT-NeoX's
// tools/datasets/corpora.py (the originals) and the Hugging Face pages of the mirrors
// (research notes, neox-formats.md §1 and §6). None was fetched from here.

// Bases of the sources; a file's URL is base + its relative name.
const (
	pileOriginal    = "https://the-eye.eu/public/AI/pile/"
	pileUncopyright = "https://huggingface.co/datasets/monology/pile-uncopyrighted/resolve/main/"
	eaidata         = "http://eaidata.bmk.sh/data/"
	mattmahoney     = "https://mattmahoney.net/dc/"
	deepai          = "https://data.deepai.org/"
	charRNN         = "https://raw.githubusercontent.com/karpathy/char-rnn/master/data/tinyshakespeare/"
)

// Notes on the sources.
const (
	noteUncopyrighted = "Hugging Face monology/pile-uncopyrighted: the Pile without Books3, BookCorpus2, OpenSubtitles, YTSubtitles and OWT2, so not byte-identical to the original"
	noteTheEye        = "original host (the-eye.eu), reported dead (gpt-neox #909, #1071)"
	noteTheEyeGuess   = noteTheEye + "; path assumed from the train layout"
)

// Tiny Shakespeare, pinned from the project's shared copy (shared/corpora/tinyshakespeare.txt),
// which the binaries embed (internal/tinyshakespeare).
const (
	shakespeareSize   = tinyshakespeare.Size
	shakespeareSHA256 = tinyshakespeare.SHA256
)

// enwik8.zip as Hugging Face's datasets library records it for mattmahoney.net's file
// (huggingface/datasets, datasets/enwik8/dataset_infos.json, download_checksums); the
// size is also the one LTCB's page gives.
const (
	enwik8Size   = 36445475
	enwik8SHA256 = "547994d9980ebed1288380d652999f38a14fe291a6247c157c3d33d4932534bc"
)

const pileNotes = "The original host is gone (gpt-neox #909) and the full Pile was taken down after a DMCA claim (gpt-neox #1071, the-pile #117). " +
	"The first source, monology/pile-uncopyrighted on Hugging Face, keeps the layout but drops Books3, BookCorpus2, OpenSubtitles, YTSubtitles and OWT2: " +
	"what you get is not byte-identical to the Pile, and token counts differ from papers. No sizes or sha256 are known " +
	"(the publisher's SHA256SUMS.txt went with the original host): prep asks the server for the sizes before it starts, warns that the files are unverified, " +
	"and checks them only as zstd; pass --checksums FILE, or a --mirror whose SHA256SUMS lists them, to have the downloads checked. " +
	"Other copies: EleutherAI/the_pile_deduplicated (parquet), EleutherAI/raw_deduplicated_pile, EleutherAI/pile_val_test (plain val.jsonl, test.jsonl)."

// pileFile returns the Pile file name (a train shard, val or test), from the
// mirror and then the original host.
func pileFile(name, split, theEyeNote string) CorpusFile {
	return CorpusFile{Name: name, Split: split, Sources: []Source{
		{URL: pileUncopyright + name, Note: noteUncopyrighted},
		{URL: pileOriginal + name, Note: theEyeNote},
	}}
}

// pileTrain returns the Pile's train shard i.
func pileTrain(i int) CorpusFile {
	return pileFile(fmt.Sprintf("train/%02d.jsonl.zst", i), "train", noteTheEye)
}

// pileCorpus is the whole Pile: 30 train shards, val and test.
func pileCorpus() Corpus {
	var files []CorpusFile
	for i := range 30 {
		files = append(files, pileTrain(i))
	}
	files = append(files,
		pileFile("val.jsonl.zst", "val", noteTheEyeGuess),
		pileFile("test.jsonl.zst", "test", noteTheEyeGuess))
	return Corpus{
		Name:             "pile",
		Description:      "The Pile, uncopyrighted variant (monology/pile-uncopyrighted, not the original): 30 zstd JSONL train shards, val, test",
		Files:            files,
		DefaultTokenizer: "gpt2",
		Notes:            pileNotes,
	}
}

// pile00Corpus is the Pile's first train shard alone.
func pile00Corpus() Corpus {
	return Corpus{
		Name:             "pile-00",
		Aliases:          []string{"pile_subset", "pile_00"},
		Description:      "The Pile's first train shard, train/00.jsonl.zst (GPT-NeoX's pile_subset), uncopyrighted variant as for pile",
		Files:            []CorpusFile{pileTrain(0)},
		DefaultTokenizer: "gpt2",
		Notes:            "Sources as for pile: the mirror drops some Pile components, so this is not byte-identical to the original shard.",
	}
}

// enronCorpus is the Pile's Enron Emails component.
func enronCorpus() Corpus {
	return Corpus{
		Name:        "enron",
		Description: "Enron Emails, one Pile component as zstd JSONL (517,401 documents in GPT-NeoX's registry)",
		Files: []CorpusFile{{Name: "enron_emails.jsonl.zst", Split: "train", Sources: []Source{
			{URL: eaidata + "enron_emails.jsonl.zst", Note: "original host (eaidata.bmk.sh), reported dead (gpt-neox #909)"},
		}}},
		DefaultTokenizer: "gpt2",
		Notes: "No other copy of this exact file is known. Parquet copies exist on Hugging Face (timaeus/pile-enron_emails, " +
			"parameterlab/scaling_mia_the_pile_00_Enron_Emails), and pile-uncopyrighted keeps Enron (meta.pile_set_name \"Enron Emails\"): " +
			"serve a copy with --mirror BASE (BASE/enron_emails.jsonl.zst), or use `prep custom`.",
	}
}

// enwik8Corpus is GPT-NeoX's default dataset.
func enwik8Corpus() Corpus {
	return Corpus{
		Name:        "enwik8",
		Description: "enwik8: 100 MB of English Wikipedia XML (Hutter Prize), zipped; read as one document",
		Files: []CorpusFile{{Name: "enwik8.zip", Split: "train", Size: enwik8Size, SHA256: enwik8SHA256, Sources: []Source{
			{URL: mattmahoney + "enwik8.zip", Verified: true, Note: "original host (Matt Mahoney's LTCB), over https (its certificate expired once, gpt-neox #949); sha256 as Hugging Face datasets recorded it from this host"},
			{URL: deepai + "enwik8.zip", Note: "the copy GPT-NeoX's corpora.py now uses; checked against the same sha256"},
		}}},
		DefaultTokenizer: "gpt2",
		Notes:            "GPT-NeoX's default dataset. The archive holds one member, read as one document, as lm_dataformat does.",
	}
}

// shakespeareCorpus is tiny Shakespeare, the one corpus with a pinned sha256.
func shakespeareCorpus() Corpus {
	return Corpus{
		Name:        "shakespeare",
		Aliases:     []string{"tinyshakespeare", "shakespeare_char"},
		Description: "Tiny Shakespeare (char-rnn's input.txt, 1.1 MB), as in nanoGPT and llm.c",
		Files: []CorpusFile{{Name: "input.txt", Split: "train", Size: shakespeareSize, SHA256: shakespeareSHA256, Embedded: tinyshakespeare.Text, Sources: []Source{
			{URL: charRNN + "input.txt", Verified: true, Note: "karpathy/char-rnn on GitHub, used by nanoGPT and llm.c; sha256 pinned"},
		}}},
		DerivedSplits:    []string{"val"},
		DefaultTokenizer: "char",
		Notes: "Built into the binary: prep writes the text from there and needs no network (--download fetches it from the sources instead, " +
			"checked against the same sha256). One file: prep splits it 90/10 into train and val (the last 10%), as nanoGPT does, and stores the character tokenizer beside the data.",
	}
}
