package tokenize

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// TestSafeSplit: long pieces of letters of several scripts (no spaces, so each text is
// one or a few pieces) give the reference's ids when cut at their safe positions, and
// they are cut: most positions between two Chinese characters are safe.
func TestSafeSplit(t *testing.T) {
	scripts := [][]rune{
		[]rune("的一是不了人我在有他这中大来上个国到说们为子和你地出道也时年得就那要下以生会自着去日本語漢字"),
		[]rune("ひらがなカタカナのはをにへでもとしてかるれたいうえおアイウエオンー"),
		[]rune("한국어가나다라마바사아자차카타파하는은이을를"),
		[]rune("абвгдежзийклмнопрстуфхцчшщыэюяАБВГД"),
		[]rune("αβγδεζηθικλμνξοπρστυφχψω"),
		[]rune("éèêëàâäôöüçñßøåæœžščřłąę"),
		[]rune("abcdefghijklmnopqrstuvwxyzABCXYZ"),
		[]rune(" ，。、！？「」1234５６'\n-_…—·"),
	}
	rng := rand.New(rand.NewPCG(7, 8))
	n := 3000
	if raceEnabled {
		n = 300
	}
	o200k := compiledO200k(t)
	for _, name := range []string{"gpt2", "neox-20b", "cl100k_base", "o200k_base"} {
		tok := sharedTokenizer(t, name)
		if name == "o200k_base" {
			tok = o200k
		}
		sp := tok.safeSplits()
		if sp == nil {
			t.Fatalf("%s: no safe splitter", name)
		}
		cuts := 0
		for i := range n {
			var sb strings.Builder
			// Mostly Chinese, sometimes a few scripts in turn (and punctuation, digits,
			// spaces, which end pieces), 2 to 120 characters.
			mixed := i%3 == 0
			for range 2 + rng.IntN(120) {
				s := scripts[0]
				if mixed {
					s = scripts[rng.IntN(len(scripts))]
				} else if rng.IntN(20) == 0 {
					s = scripts[len(scripts)-1]
				}
				sb.WriteRune(s[rng.IntN(len(s))])
			}
			text := sb.String()
			if len(sp.appendCuts(nil, text)) > 0 {
				cuts++
			}
			if got, want := tok.Encode(text), tok.refEncode(text); !slices.Equal(got, want) {
				t.Fatalf("%s: %s", name, firstDiff(tok, text, got, want))
			}
		}
		if cuts < n/2 {
			t.Fatalf("%s: %d of %d texts have a safe position", name, cuts, n)
		}
	}
}

// TestSafeSplitPositions checks appendCuts against its definition on some texts: a
// position it gives lies between characters, next to a multi-byte one (between two,
// under tiktoken's vocabularies), and no token of the vocabulary matches the text
// across it. o200k_base loaded from its file is not cut (too many tokens to check when
// the splitter is built); from its compiled form it is.
func TestSafeSplitPositions(t *testing.T) {
	texts := []string{
		"日本語の漢字とひらがなカタカナ中文字한국어가나다",
		"caféélèveñandúΑθήναМоскваabc日本",
		strings.Repeat("的一是不了人我在", 20),
		"abc", "日本", "é",
	}
	for _, name := range []string{"gpt2", "cl100k_base", "o200k_base"} {
		tok := sharedTokenizer(t, name)
		if name == "o200k_base" {
			tok = compiledO200k(t)
		}
		sp := tok.safeSplits()
		for _, text := range texts {
			for _, i := range sp.appendCuts(nil, text) {
				if text[i]&0xC0 == 0x80 || text[i] < 0x80 && text[i-1] < 0x80 {
					t.Fatalf("%s: %q: position %d is safe but not between characters next to a multi-byte one", name, text, i)
				}
				if tok.mergeSemantics == "ranks" && (text[i] < 0x80 || text[i-1] < 0x80) {
					t.Fatalf("%s: %q: position %d is safe but not between two multi-byte characters", name, text, i)
				}
				for s := max(0, i-tok.maxTokenByteLen); s < i; s++ {
					for e := i + 1; e <= len(text) && e-s <= tok.maxTokenByteLen; e++ {
						if _, ok := tok.tokenID(text[s:e]); ok {
							t.Fatalf("%s: %q: position %d is safe, but token %q lies across it", name, text, i, text[s:e])
						}
					}
				}
			}
		}
	}
	if sharedTokenizer(t, "o200k_base").safeSplits() != nil {
		t.Fatal("o200k_base from its file: a safe splitter, where its tokens were not checked")
	}
}

// compiledO200k is o200k_base loaded from its compiled form, which says its merges
// rebuild every token with a byte of 0x80 or more (MarshalCompiled checks it).
func compiledO200k(t *testing.T) *Tokenizer {
	t.Helper()
	data, err := sharedTokenizer(t, "o200k_base").MarshalCompiled()
	if err != nil {
		t.Fatal(err)
	}
	tok, err := LoadCompiled(data, "")
	if err != nil {
		t.Fatal(err)
	}
	if !tok.highRebuilt {
		t.Fatal("o200k_base's compiled form does not say its merges rebuild its tokens")
	}
	return tok
}
