package fetch

import (
	"bytes"
	"fmt"
	"strings"
)

// ParseSHA256SUMS reads a checksum list as sha256sum writes it and returns the hex
// sha256 (lower case) of each file name. Accepted lines:
//
//	HEX  name        text mode (two spaces)
//	HEX *name        binary mode
//	SHA256 (name) = HEX   the BSD form (sha256sum --tag)
//
// A leading "./" is dropped from names; a line starting with a backslash has its
// name unescaped as sha256sum does (\\ and \n). Blank lines and lines starting with
// '#' are ignored, and a CR before the newline is dropped. A malformed line, or a name
// listed twice with different sums, is an error naming the line.
func ParseSHA256SUMS(data []byte) (map[string]string, error) {
	sums := make(map[string]string)
	firstLine := make(map[string]int)
	for i, raw := range bytes.Split(data, []byte("\n")) {
		n := i + 1
		line := strings.TrimSuffix(string(raw), "\r")
		if trimmed := strings.TrimSpace(line); trimmed == "" || strings.HasPrefix(trimmed, "#") {
			continue
		}
		sum, name, err := parseSumLine(line)
		if err != nil {
			return nil, fmt.Errorf("fetch: SHA256SUMS line %d: %w", n, err)
		}
		name = strings.TrimPrefix(name, "./")
		if old, ok := sums[name]; ok && old != sum {
			return nil, fmt.Errorf("fetch: SHA256SUMS line %d: %s is listed again with another sha256 (first on line %d)", n, name, firstLine[name])
		}
		if _, ok := sums[name]; !ok {
			firstLine[name] = n
		}
		sums[name] = sum
	}
	return sums, nil
}

// parseSumLine parses one non-blank, non-comment line of a checksum list.
func parseSumLine(line string) (sum, name string, err error) {
	escaped := strings.HasPrefix(line, "\\")
	line = strings.TrimPrefix(line, "\\")
	if rest, ok := strings.CutPrefix(line, "SHA256 ("); ok {
		i := strings.LastIndex(rest, ") = ")
		if i < 0 {
			return "", "", fmt.Errorf("want \"SHA256 (name) = HEX\", got %q", line)
		}
		sum, name = rest[i+len(") = "):], rest[:i]
	} else {
		if len(line) < 66 || (line[64:66] != "  " && line[64:66] != " *") {
			return "", "", fmt.Errorf("want 64 hex digits, two spaces (or a space and '*') and a file name, got %q", line)
		}
		sum, name = line[:64], line[66:]
	}
	norm, err := normalizeSHA256(sum)
	if err != nil || len(sum) != 64 {
		return "", "", fmt.Errorf("%q is not a sha256 (64 hex digits)", sum)
	}
	if escaped {
		name = unescapeName(name)
	}
	if name == "" {
		return "", "", fmt.Errorf("no file name after the sha256 in %q", line)
	}
	return norm, name, nil
}

// unescapeName undoes sha256sum's escaping of names holding a backslash or newline.
func unescapeName(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			switch s[i+1] {
			case '\\':
				b.WriteByte('\\')
				i++
				continue
			case 'n':
				b.WriteByte('\n')
				i++
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
