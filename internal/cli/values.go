package cli

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// ListFlag is a repeatable string flag. With Comma, each value may also hold several
// comma-separated items. The first Set replaces the default Values.
type ListFlag struct {
	Values []string
	Comma  bool
	set    bool
}

func (l *ListFlag) String() string { return strings.Join(l.Values, ",") }

// Get makes -h print the default quoted, like a string flag's.
func (l *ListFlag) Get() any { return l.String() }

// Set adds v (split at commas with Comma).
func (l *ListFlag) Set(v string) error {
	if !l.set {
		l.Values, l.set = nil, true
	}
	parts := []string{v}
	if l.Comma {
		parts = strings.Split(v, ",")
	}
	for _, p := range parts {
		if p = strings.TrimSpace(p); p != "" {
			l.Values = append(l.Values, p)
		}
	}
	return nil
}

// ExpandListArgs rewrites "--flag a b c --other" as "--flag a --flag b --flag c --other",
// so that a list flag takes the words after it, as usage lines like "--input FILE..." show.
func ExpandListArgs(args []string, flagName string) []string {
	var out []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		out = append(out, a)
		if a != "-"+flagName && a != "--"+flagName {
			continue
		}
		if i+1 < len(args) {
			out = append(out, args[i+1])
			i++
		}
		for i+1 < len(args) && !strings.HasPrefix(args[i+1], "-") {
			out = append(out, "--"+flagName, args[i+1])
			i++
		}
	}
	return out
}

// ParseSize reads a byte count: a whole number with an optional unit, in any case:
// 512, 64KB, 500MB, 4GiB, 1TB. Anything else ("4G", "1.5GB", "0x10", "2k") is an
// error, not a misread: fmt.Sscan once read "4G" as 4 bytes.
func ParseSize(s string) (int64, error) {
	orig := s
	s = strings.TrimSpace(s)
	units := []struct {
		suffix string
		mult   int64
	}{{"KIB", 1 << 10}, {"MIB", 1 << 20}, {"GIB", 1 << 30}, {"TIB", 1 << 40},
		{"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12}, {"B", 1}}
	mult := int64(1)
	for _, u := range units {
		if len(s) >= len(u.suffix) && strings.EqualFold(s[len(s)-len(u.suffix):], u.suffix) {
			s, mult = strings.TrimSpace(s[:len(s)-len(u.suffix)]), u.mult
			break
		}
	}
	bad := fmt.Errorf("%q is not a size: a whole number of bytes with an optional unit B, KB, MB, GB, TB (powers of 1000) or KiB, MiB, GiB, TiB (of 1024), e.g. 4GiB, 500MB, 0", orig)
	if s == "" || strings.TrimLeft(s, "0123456789") != "" {
		return 0, bad
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n > math.MaxInt64/mult {
		return 0, fmt.Errorf("%q is too large a size", orig)
	}
	return n * mult, nil
}
