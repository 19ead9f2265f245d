package freeport

import (
	"net"
	"strconv"
	"testing"
)

func TestPick(t *testing.T) {
	ports, err := Pick(20)
	if err != nil {
		t.Fatal(err)
	}
	lo, hi := candidates()
	seen := map[int]bool{}
	for _, p := range ports {
		if p < lo || p > hi || seen[p] {
			t.Errorf("port %d: outside %d-%d or twice", p, lo, hi)
		}
		seen[p] = true
		l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
		if err != nil {
			t.Errorf("port %d: %v", p, err)
			continue
		}
		l.Close()
	}
}
