package tokenize

// splitGPT2 is a hand-made scanner equal to the GPT-2 / HF ByteLevel pre-tokenizer regex
//
//	's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
//
// as Oniguruma runs it (ordered alternation, backtracking), with HF's Unicode 16.0 classes.
// At each position:
//  1. ' followed by s, t, re, ve, m, ll or d (lowercase ASCII) is a contraction;
//  2. an optional U+0020 and a maximal run of letters, of numbers, or of "other";
//  3. whitespace: a run reaching the end of the text is one piece; otherwise all of the run
//     but its last character is a piece (if ≥ 2 characters), and the last character either
//     joins the next word (a U+0020, by rule 2) or is a piece of its own.
//
// It appends the end offsets of the pieces of s to ends. See refSplitGPT2 for the literal,
// slow form that tests compare it with.
func splitGPT2(s string, ends []int) []int {
	n := len(s)
	i := 0
	for i < n {
		c := s[i]
		if c == '\'' {
			if k := contractionLen(s, i); k > 0 {
				i += k
				ends = append(ends, i)
				continue
			}
		}
		cls, w := classAt(s, i)
		start := i
		if c == ' ' && i+1 < n {
			// A space followed by a non-space joins the run that follows it.
			next, nw := classAt(s, i+1)
			if next != classSpace {
				i = runEnd(s, i+1+nw, next)
				ends = append(ends, i)
				continue
			}
		}
		if cls != classSpace {
			i = runEnd(s, i+w, cls)
			ends = append(ends, i)
			continue
		}
		// Whitespace run [start, k); last is the start of its last character.
		k, last := start+w, start
		for k < n {
			cl, cw := classAt(s, k)
			if cl != classSpace {
				break
			}
			last = k
			k += cw
		}
		switch {
		case k == n:
			i = n
		case last > start:
			i = last // all but the last whitespace character
		default:
			i = k
		}
		ends = append(ends, i)
	}
	return ends
}

// runEnd returns the end of the maximal run of class cls that continues at i.
func runEnd(s string, i int, cls uint8) int {
	n := len(s)
	for i < n {
		c := asciiClass[s[i]]
		if c == classMulti {
			var w int
			c, w = classAt(s, i)
			if c != cls {
				return i
			}
			i += w
			continue
		}
		if c != cls {
			return i
		}
		i++
	}
	return i
}

// contractionLen returns the length of the lowercase contraction ('s 't 're 've 'm 'll 'd)
// at s[i] == '\”, or 0.
func contractionLen(s string, i int) int {
	if i+1 >= len(s) {
		return 0
	}
	switch s[i+1] {
	case 's', 't', 'm', 'd':
		return 2
	case 'r', 'v':
		if i+2 < len(s) && s[i+2] == 'e' {
			return 3
		}
	case 'l':
		if i+2 < len(s) && s[i+2] == 'l' {
			return 3
		}
	}
	return 0
}
