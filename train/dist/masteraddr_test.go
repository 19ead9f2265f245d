package dist

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
)

// TestCheckMasterAddr: a master address that is a name resolving to loopback only (the
// machine's own name in Debian's /etc/hosts: 127.0.1.1) is refused for a job on several
// nodes, naming the address and the next step (the other nodes waited --dist-timeout
// for a store bound to loopback); literals, names with a network address and names
// that do not resolve yet pass.
func TestCheckMasterAddr(t *testing.T) {
	defer func(old func(context.Context, string) ([]net.IPAddr, error)) { lookupIPAddr = old }(lookupIPAddr)
	hosts := map[string][]string{
		"node0":  {"127.0.1.1"},
		"node0b": {"::1", "127.0.0.1"},
		"node1":  {"127.0.1.1", "10.0.0.2"},
	}
	lookupIPAddr = func(_ context.Context, host string) ([]net.IPAddr, error) {
		var out []net.IPAddr
		for _, s := range hosts[host] {
			out = append(out, net.IPAddr{IP: net.ParseIP(s)})
		}
		if out == nil {
			return nil, errors.New("no such host")
		}
		return out, nil
	}
	for host, refused := range map[string]bool{"node0": true, "node0b": true, "node1": false, "127.0.0.1": false, "localhost": false, "::1": false, "unknown": false, "": false} {
		err := CheckMasterAddr(context.Background(), host)
		if (err != nil) != refused {
			t.Errorf("%q: %v, want refused %v", host, err, refused)
		}
		if err != nil && (!strings.Contains(err.Error(), "loopback") || !strings.Contains(err.Error(), "HINT") || !strings.Contains(err.Error(), host)) {
			t.Errorf("%q: %v does not say what and what to do", host, err)
		}
	}
}
