package tokenize

// tokenStrings holds the bytes of each token by id: one string of them all and each
// token's offsets in it, so that the garbage collector follows a few pointers where a
// []string had one per token (o200k_base's 200,000 took ~4 ms of the first collection
// after a load, a tenth of a process that loads it and encodes nothing; and as much at
// every later one). Contents that are not in the string (added tokens set after it is
// made) are in extra.
type tokenStrings struct {
	blob  string
	offs  []uint32 // id's bytes are blob[offs[id]:offs[id+1]], for id < len(offs)-1
	n     int      // ids: 0 to n-1
	extra map[int]string
}

// packTokens makes the tokenStrings of vocab (vocab[id], "" for ids that are not tokens).
func packTokens(vocab []string) tokenStrings {
	size := 0
	for _, tok := range vocab {
		size += len(tok)
	}
	blob := make([]byte, 0, size)
	offs := make([]uint32, 0, len(vocab)+1)
	for _, tok := range vocab {
		offs = append(offs, uint32(len(blob)))
		blob = append(blob, tok...)
	}
	offs = append(offs, uint32(len(blob)))
	return tokenStrings{blob: string(blob), offs: offs, n: len(vocab)}
}

// len returns the number of ids.
func (v *tokenStrings) len() int { return v.n }

// at returns the bytes of token id ("" if it is none), for 0 <= id < len().
func (v *tokenStrings) at(id int) string {
	if id+1 < len(v.offs) {
		if s := v.blob[v.offs[id]:v.offs[id+1]]; s != "" || v.extra == nil {
			return s
		}
	}
	return v.extra[id]
}

// set gives id, which has no bytes yet or these, the bytes s.
func (v *tokenStrings) set(id int, s string) {
	if v.at(id) == s {
		return
	}
	if v.extra == nil {
		v.extra = map[int]string{}
	}
	v.extra[id] = s
}

// strings returns the tokens as a []string (for the tests).
func (v *tokenStrings) strings() []string {
	out := make([]string, v.n)
	for id := range out {
		out[id] = v.at(id)
	}
	return out
}
