// Package freeport picks TCP ports on 127.0.0.1 for the tests' servers and jobs (a
// rendezvous store's MASTER_PORT, MinIO, SLURM's daemons) outside the kernel's
// ephemeral range. A port that the kernel hands out for port 0, as net.Listen
// ("127.0.0.1:0") finds one, can be handed out again between the check and the bind of
// the process given it: srun once bound the MASTER_PORT of its own job for its I/O
// sockets, and the job's rank 1 talked to srun (CI, 2026-11-27). Ports below the range
// are never handed out by the kernel.
package freeport

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
)

// Pick returns n distinct ports that nothing listens on now.
func Pick(n int) ([]int, error) {
	lo, hi := candidates()
	seen := map[int]bool{}
	var ports []int
	for tries := 0; len(ports) < n; tries++ {
		if tries == 1000 {
			return nil, fmt.Errorf("freeport: no free port in %d-%d after 1000 tries", lo, hi)
		}
		p := lo + rand.IntN(hi-lo+1)
		if seen[p] {
			continue
		}
		seen[p] = true
		l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
		if err != nil {
			continue
		}
		l.Close()
		ports = append(ports, p)
	}
	return ports, nil
}

// One returns one port that nothing listens on now.
func One() (int, error) {
	p, err := Pick(1)
	if err != nil {
		return 0, err
	}
	return p[0], nil
}

// candidates is the range ports are picked from: the 10,000 below the ephemeral range
// (Linux's default 32768-60999), or above it if it starts too low.
func candidates() (lo, hi int) {
	elo, ehi := 32768, 60999
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			if a, err := strconv.Atoi(f[0]); err == nil {
				elo = a
			}
			if a, err := strconv.Atoi(f[1]); err == nil {
				ehi = a
			}
		}
	}
	if elo >= 11024 {
		return elo - 10000, elo - 1
	}
	if ehi <= 55535 {
		return ehi + 1, ehi + 10000
	}
	return 1024, 65535 // the range covers nearly everything: take any
}
