package tokenize

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"
)

// Word counting: the texts are batched (about countBatchBytes per batch) and handed to
// Workers goroutines, each with its own map piece -> count; the maps are summed at the
// end. Sums do not depend on which worker saw which text, so neither does the result.

const (
	countBatchBytes = 256 << 10 // text per batch handed to a worker
	countSplitBytes = 1 << 20   // texts longer than this are cut at TrainCut points
)

// countWords pre-tokenizes every text and counts the distinct pieces.
func countWords(ctx context.Context, texts func(yield func(string) bool) error, opt TrainOptions) (map[string]int64, TrainStats, error) {
	var specials *addedMatcher
	if len(opt.Special) > 0 {
		added := make([]AddedToken, len(opt.Special))
		for i, s := range opt.Special {
			added[i] = AddedToken{ID: i, Content: s, Special: true}
		}
		specials = newAddedMatcher(added)
	}
	batches := make(chan []string, opt.Workers)
	counters := make([]*wordCounter, opt.Workers)
	var wg sync.WaitGroup
	for w := range counters {
		c := &wordCounter{words: make(map[string]int64), specials: specials}
		counters[w] = c
		wg.Add(1)
		go func() {
			defer wg.Done()
			for batch := range batches {
				for _, s := range batch {
					c.addText(s)
				}
			}
		}()
	}

	var stats TrainStats
	var batch []string
	var batchBytes int
	send := func() bool {
		if len(batch) == 0 {
			return true
		}
		select {
		case batches <- batch:
		case <-ctx.Done():
			return false
		}
		batch, batchBytes = nil, 0
		if opt.Progress != nil {
			opt.Progress("count", stats.Bytes, -1)
		}
		return true
	}
	add := func(s string) bool {
		batch = append(batch, s)
		batchBytes += len(s)
		return batchBytes < countBatchBytes || send()
	}
	yield := func(s string) bool {
		if ctx.Err() != nil {
			return false
		}
		stats.Texts++
		stats.Bytes += int64(len(s))
		// Cut long texts so that one huge document still spreads over the workers.
		for len(s) > countSplitBytes {
			p := lastCut(s, countBatchBytes)
			if p <= 0 {
				break
			}
			if !add(s[:p]) {
				return false
			}
			s = s[p:]
		}
		return add(s)
	}
	srcErr := texts(yield)
	if srcErr == nil {
		send()
	}
	close(batches)
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, stats, fmt.Errorf("tokenize: train: %w", err)
	}
	if srcErr != nil {
		return nil, stats, fmt.Errorf("tokenize: train: reading texts: %w", srcErr)
	}
	if opt.Progress != nil {
		opt.Progress("count", stats.Bytes, stats.Bytes)
	}

	// Sum the per-worker maps into the largest one.
	big := 0
	for i, c := range counters {
		if len(c.words) > len(counters[big].words) {
			big = i
		}
	}
	words := counters[big].words
	for i, c := range counters {
		stats.Words += c.pieces
		if i == big {
			continue
		}
		for k, v := range c.words {
			words[k] += v
		}
		c.words = nil
	}
	stats.UniqueWords = int64(len(words))
	return words, stats, nil
}

// wordCounter counts the pre-tokenized pieces of the texts one worker sees.
type wordCounter struct {
	words    map[string]int64
	specials *addedMatcher
	pieces   int64
	ends     []int
	win      classWindow
}

// addText counts the pieces of s, skipping the special tokens in it.
func (c *wordCounter) addText(s string) {
	if !utf8.ValidString(s) {
		s = ReplaceInvalidUTF8(s)
	}
	if c.specials == nil {
		c.addSegment(s)
		return
	}
	for from := 0; from < len(s); {
		start, end, _ := c.specials.find(s, from)
		if start < 0 {
			c.addSegment(s[from:])
			return
		}
		c.addSegment(s[from:start])
		from = end
	}
}

// addSegment counts the pieces of a segment free of special tokens.
func (c *wordCounter) addSegment(s string) {
	if s == "" {
		return
	}
	c.ends = splitAll(splitGPT2, &c.win, s, c.ends[:0])
	prev := 0
	for _, end := range c.ends {
		p := s[prev:end]
		prev = end
		if n, ok := c.words[p]; ok {
			c.words[p] = n + 1
		} else {
			c.words[strings.Clone(p)] = 1 // do not keep the whole text alive
		}
	}
	c.pieces += int64(len(c.ends))
}

// TrainCut returns an offset p at which text can be cut into text[:p] and text[p:] so
// that Train, given the two parts as separate texts, counts exactly the pieces it counts
// for the whole: the last p (0 < p < len(text)) where text[p] is ASCII whitespace
// (space, \t, \n, \v, \f, \r) and the character before it is not whitespace; 0 if
// there is none. Such a p is a pre-tokenizer boundary that needs no context from either
// side: the piece before it is a run of letters, numbers or other characters, which a
// whitespace character ends, and the scan after it starts afresh at p. Special tokens
// (printable ASCII, see TrainOptions.Special) contain no whitespace, so none reaches
// across p, and an invalid UTF-8 sequence cannot either.
//
// Readers that feed Train from a stream use it to cut their buffer; the remainder
// starts the next chunk.
func TrainCut(text []byte) int {
	return lastCut(text, len(text)-1)
}

// lastCut is TrainCut for a string or []byte, looking at offsets up to limit only.
func lastCut[T ~string | ~[]byte](text T, limit int) int {
	for p := min(limit, len(text)-1); p > 0; p-- {
		if c := text[p]; c != ' ' && (c < '\t' || c > '\r') {
			continue
		}
		if c := text[p-1]; c < utf8.RuneSelf {
			if c != ' ' && (c < '\t' || c > '\r') {
				return p
			}
			continue
		}
		// A multi-byte character (or invalid UTF-8, which becomes U+FFFD) before p.
		var buf [utf8.UTFMax]byte
		n := copy(buf[:], text[max(0, p-utf8.UTFMax):p])
		if r, _ := utf8.DecodeLastRune(buf[:n]); !unicode.IsSpace(r) {
			return p
		}
	}
	return 0
}
