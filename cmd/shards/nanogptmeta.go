package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"log/slog"

	"gptkit/internal/cli"
	"gptkit/shards"
	"gptkit/storage"
	"gptkit/tokenize"
	"gptkit/tokenize/spec"
)

// nanoGPTMetaName is the vocabulary file nanoGPT reads beside train.bin and val.bin.
const nanoGPTMetaName = "meta.pkl"

// nanoGPTMeta is the meta.pkl to write beside a --to nanogpt export of the dataset in
// st (nil: none). nanoGPT's train.py takes vocab_size from meta.pkl and its sample.py
// the characters (itos, stoi); without the file they assume GPT-2 (vocab_size 50304,
// GPT-2's encoding), so a character dataset exported without it trained a model 50304
// wide and sampled garbage. A character vocabulary gets meta.pkl as nanoGPT's
// shakespeare_char/prepare.py writes it; GPT-2's vocabulary needs none; any other gets a
// warning, as does a tokenizer that cannot be found offline.
func nanoGPTMeta(ctx context.Context, st storage.Store, info shards.TokenizerInfo, open func(context.Context, string) (storage.Store, error), log *slog.Logger) ([]byte, error) {
	dir, from, cleanup, err := cli.TokenizerBeside(ctx, st, open, log)
	if err != nil {
		return nil, err
	}
	defer cleanup()
	tok, err := spec.ForDataset(ctx, dir, info.Name, info.Fingerprint, spec.Options{})
	if err != nil {
		log.Warn("no meta.pkl written: the dataset's tokenizer was not found offline; nanoGPT will assume GPT-2's vocabulary (vocab_size 50304, GPT-2's encoding in sample.py)",
			"tokenizer", info.Name, "error", cli.NamedBeside(err, dir, from))
		return nil, nil
	}
	if tok.Kind() == tokenize.KindChar {
		chars := make([]string, tok.VocabSize())
		for id := range chars {
			chars[id] = string(tok.TokenBytes(id))
		}
		return nanoGPTCharMeta(chars), nil
	}
	if gpt2, err := spec.LoadName(ctx, "gpt2", spec.Options{}); err == nil && gpt2.Fingerprint() == tok.Fingerprint() {
		return nil, nil // nanoGPT's default
	}
	log.Warn("no meta.pkl written: nanoGPT reads only character vocabularies from it and assumes GPT-2's otherwise (train.py: vocab_size 50304; sample.py: GPT-2's encoding); set the model's vocab_size and decode samples with this tokenizer yourself",
		"tokenizer", tok.Name(), "vocab_size", tok.VocabSize())
	return nil, nil
}

// nanoGPTCharMeta is nanoGPT's meta.pkl for the character vocabulary chars (id i is
// chars[i]): the pickle of {'vocab_size': N, 'itos': {i: ch}, 'stoi': {ch: i}}, as
// shakespeare_char/prepare.py writes it.
//
// Written by hand, in pickle protocol 2 (Python 2.3+; every Python 3 reads it): go.mod
// has no pickle writer and no well-kept Go one exists, and three flat dicts of ints and
// strings need only six opcodes. No memo: unpickling needs none.
func nanoGPTCharMeta(chars []string) []byte {
	var b bytes.Buffer
	b.Write([]byte{0x80, 2}) // PROTO 2
	b.WriteString("}(")      // EMPTY_DICT, MARK
	pickleString(&b, "vocab_size")
	pickleInt(&b, len(chars))
	pickleString(&b, "itos")
	b.WriteString("}(")
	for i, c := range chars {
		pickleInt(&b, i)
		pickleString(&b, c)
	}
	b.WriteString("u") // SETITEMS
	pickleString(&b, "stoi")
	b.WriteString("}(")
	for i, c := range chars {
		pickleString(&b, c)
		pickleInt(&b, i)
	}
	b.WriteString("uu.") // SETITEMS (stoi), SETITEMS (the outer dict), STOP
	return b.Bytes()
}

// pickleInt writes n, an id or a vocabulary size (0 <= n < 2^31): BININT1, BININT2
// or BININT.
func pickleInt(b *bytes.Buffer, n int) {
	switch {
	case n < 1<<8:
		b.Write([]byte{'K', byte(n)})
	case n < 1<<16:
		b.Write([]byte{'M', byte(n), byte(n >> 8)})
	default:
		b.WriteByte('J')
		binary.Write(b, binary.LittleEndian, int32(n))
	}
}

// pickleString writes a str: BINUNICODE, its UTF-8 length (uint32 LE), its UTF-8 bytes.
func pickleString(b *bytes.Buffer, s string) {
	b.WriteByte('X')
	binary.Write(b, binary.LittleEndian, uint32(len(s)))
	b.WriteString(s)
}
