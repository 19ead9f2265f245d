package tokenize

import (
	"sort"
	"strings"
)

// addedMatcher finds added tokens in text, leftmost-longest (as HF's aho-corasick
// LeftmostLongest does): at the leftmost position where any token starts, the longest
// token that starts there wins.
type addedMatcher struct {
	root  [256]int32 // child of the root for each first byte, 0 = none
	nodes []trieNode // nodes[0] is unused (0 means "no node")
	// prefix is the longest prefix all tokens share (at least their first byte when they
	// all have the same one): find jumps from one occurrence of it to the next
	// (strings.IndexByte for one byte, indexPair for two, strings.Index for more)
	// instead of walking the trie at every byte.
	prefix string
}

type trieNode struct {
	id    int32 // token id ending here, -1 if none
	edges []trieEdge
}

type trieEdge struct {
	b     byte
	child int32
}

func newAddedMatcher(tokens []AddedToken) *addedMatcher {
	if len(tokens) == 0 {
		return nil
	}
	m := &addedMatcher{nodes: make([]trieNode, 1)}
	first := true
	for _, tok := range tokens {
		if tok.Content == "" {
			continue
		}
		if first {
			m.prefix, first = tok.Content, false
		}
		for !strings.HasPrefix(tok.Content, m.prefix) {
			m.prefix = m.prefix[:len(m.prefix)-1]
		}
		cur := int32(0)
		for i := 0; i < len(tok.Content); i++ {
			cur = m.child(cur, tok.Content[i])
		}
		m.nodes[cur].id = int32(tok.ID)
	}
	for i := range m.nodes {
		e := m.nodes[i].edges
		sort.Slice(e, func(a, b int) bool { return e[a].b < e[b].b })
	}
	return m
}

// child returns (creating it if needed) the child of node cur for byte b.
func (m *addedMatcher) child(cur int32, b byte) int32 {
	if cur == 0 {
		if m.root[b] == 0 {
			m.root[b] = m.newNode()
		}
		return m.root[b]
	}
	for _, e := range m.nodes[cur].edges {
		if e.b == b {
			return e.child
		}
	}
	n := m.newNode()
	m.nodes[cur].edges = append(m.nodes[cur].edges, trieEdge{b, n})
	return n
}

func (m *addedMatcher) newNode() int32 {
	m.nodes = append(m.nodes, trieNode{id: -1})
	return int32(len(m.nodes) - 1)
}

// find returns the leftmost-longest added token in s at or after from:
// its start, its end and its id; start is -1 if there is none.
func (m *addedMatcher) find(s string, from int) (start, end, id int) {
	for i := from; i < len(s); i++ {
		k := -1
		switch len(m.prefix) {
		case 0:
			k = 0
		case 1:
			k = strings.IndexByte(s[i:], m.prefix[0])
		case 2:
			k = indexPair(s[i:], m.prefix[0], m.prefix[1])
		default: // GPT-2's <|endoftext|>: strings.Index is fast for long needles
			k = strings.Index(s[i:], m.prefix)
		}
		if k < 0 {
			return -1, -1, -1
		}
		i += k
		cur := m.root[s[i]]
		if cur == 0 {
			continue
		}
		bestEnd, bestID := -1, int32(-1)
		for j := i + 1; ; j++ {
			if nd := &m.nodes[cur]; nd.id >= 0 {
				bestEnd, bestID = j, nd.id
			}
			if j >= len(s) {
				break
			}
			cur = m.next(cur, s[j])
			if cur == 0 {
				break
			}
		}
		if bestEnd >= 0 {
			return i, bestEnd, int(bestID)
		}
	}
	return -1, -1, -1
}

func (m *addedMatcher) next(cur int32, b byte) int32 {
	for _, e := range m.nodes[cur].edges {
		if e.b == b {
			return e.child
		}
		if e.b > b {
			break
		}
	}
	return 0
}
