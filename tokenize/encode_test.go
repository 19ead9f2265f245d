package tokenize

import (
	"strings"
	"testing"
)

// TestReadable: the hot loop may read past a segment's end only within the text the
// segment is part of.
func TestReadable(t *testing.T) {
	host := strings.Repeat("abcdefgh", 8)
	st := &encodeState{host: host}
	for _, tc := range []struct {
		s    string
		want int
	}{
		{host, len(host)},
		{host[3:10], len(host) - 3},
		{host[60:], 4},
		{host[64:], 0},
		{strings.Clone(host[3:10]), 7}, // not within host
		{"", 0},
	} {
		if got := st.readable(tc.s); got != tc.want {
			t.Errorf("readable(%q) = %d, want %d", tc.s, got, tc.want)
		}
	}
	st.host = ""
	if got := st.readable(host[3:10]); got != 7 {
		t.Errorf("readable without a host = %d, want 7", got)
	}
}
