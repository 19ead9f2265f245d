package launch

import (
	"bufio"
	"bytes"
	"fmt"
	"strconv"
	"strings"
)

// Host is one line of a hostfile: a host and how many ranks it runs.
type Host struct {
	Name  string
	Slots int
}

// maxSlots bounds a host's slots.
const maxSlots = 1024

// ParseHostfile reads a DeepSpeed/GPT-NeoX hostfile: one "HOST slots=N" per line,
// blank lines and # comments ignored. HOST may not start with '-' (it would be
// an option to ssh) and holds only letters, digits and ._:@- (names, IPv4 and IPv6
// addresses, user@host). Every host must have the same slots: gptkit runs the same
// number of ranks on every node.
func ParseHostfile(data []byte, name string) ([]Host, error) {
	var hosts []Host
	seen := map[string]int{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if i := strings.IndexByte(line, '#'); i >= 0 {
			line = line[:i]
		}
		fields := strings.Fields(line)
		if len(fields) == 0 {
			continue
		}
		bad := func(format string, args ...any) error {
			return fmt.Errorf("launch: %s:%d: %s (want \"HOST slots=N\")", name, n, fmt.Sprintf(format, args...))
		}
		host := fields[0]
		if err := checkHost(host); err != nil {
			return nil, bad("%v", err)
		}
		if len(fields) == 1 {
			return nil, bad("host %s has no slots=N", host)
		}
		v, ok := strings.CutPrefix(fields[1], "slots=")
		if !ok {
			return nil, bad("%q is not slots=N", strings.Join(fields[1:], " "))
		}
		if len(fields) > 2 {
			return nil, bad("%q after slots=%s: a line is a host and its slots, nothing else", strings.Join(fields[2:], " "), v)
		}
		k, err := strconv.Atoi(v)
		if err != nil || k < 1 || k > maxSlots {
			return nil, bad("slots %q: want an integer in [1,%d]", v, maxSlots)
		}
		// user@node1 and node1 are one machine: two launchers there would start
		// two nodes' ranks on its GPUs.
		if prev, dup := seen[masterHost(host)]; dup {
			return nil, bad("host %s already on line %d (one line per machine, its slots its ranks)", host, prev)
		}
		seen[masterHost(host)] = n
		if len(hosts) > 0 && hosts[0].Slots != k {
			return nil, bad("host %s has %d slots, %s has %d: every node runs the same number of ranks", host, k, hosts[0].Name, hosts[0].Slots)
		}
		hosts = append(hosts, Host{Name: host, Slots: k})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("launch: %s: %w", name, err)
	}
	if len(hosts) == 0 {
		return nil, fmt.Errorf("launch: %s names no host", name)
	}
	return hosts, nil
}

func checkHost(h string) error {
	if h == "" || h[0] == '-' {
		return fmt.Errorf("host %q may not start with '-'", h)
	}
	for _, r := range h {
		ok := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("._:@-[]%", r)
		if !ok {
			return fmt.Errorf("host %q: character %q not allowed", h, r)
		}
	}
	return nil
}

// masterHost is the host part of a hostfile entry (user@host → host, [v6] → v6).
func masterHost(h string) string {
	if i := strings.LastIndexByte(h, '@'); i >= 0 {
		h = h[i+1:]
	}
	return strings.TrimSuffix(strings.TrimPrefix(h, "["), "]")
}
