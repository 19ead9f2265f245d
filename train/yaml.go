package train

import (
	"bytes"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"unicode/utf8"
)

// A config file is a flat YAML mapping of scalars:
//
//	# nanoGPT's baby GPT
//	n_layer: 4
//	lr: 1e-3          # comments run to the end of the line
//	data: "./data/shakespeare"
//
// The reader is hand-written for that subset (a full YAML library would accept
// nesting, anchors and lists that mean nothing here, and report them less
// precisely): one "key: value" per line, values plain, 'single-quoted' or
// "double-quoted" (with \" \\ \n \t escapes), # comments, blank lines, and an
// optional leading "---". Anything else (indentation, lists, flow collections,
// anchors, several documents, a repeated key) is an error naming the line.

// yamlEntry is one key: value line.
type yamlEntry struct {
	Key, Value string
	Line       int
}

// parseYAML reads a flat mapping of scalars. name is used in error messages.
func parseYAML(data []byte, name string) ([]yamlEntry, error) {
	if !utf8.Valid(data) {
		return nil, fmt.Errorf("%s: not UTF-8 text", name)
	}
	data = bytes.TrimPrefix(data, []byte("\ufeff"))
	var out []yamlEntry
	seen := map[string]int{}
	lines := strings.Split(string(data), "\n")
	for i, raw := range lines {
		n := i + 1
		line := strings.TrimSuffix(raw, "\r")
		bad := func(format string, args ...any) error {
			return fmt.Errorf("%s:%d: %s", name, n, fmt.Sprintf(format, args...))
		}
		trimmed := strings.TrimSpace(line)
		if trimmed == "" || strings.HasPrefix(trimmed, "#") {
			continue
		}
		if trimmed == "---" && len(out) == 0 && line == "---" {
			continue
		}
		if line[0] == ' ' || line[0] == '\t' {
			return nil, bad("indented line: a config is a flat list of key: value lines (no nesting)")
		}
		switch line[0] {
		case '-', '[', '{', '&', '*', '!', '?', '|', '>', '%', '@', '`', '"', '\'':
			if strings.HasPrefix(line, "---") || strings.HasPrefix(line, "...") {
				return nil, bad("a config file holds one YAML document")
			}
			return nil, bad("want key: value, got %q", trimmed)
		}
		colon := strings.Index(line, ":")
		if colon < 0 {
			return nil, bad("want key: value, got %q", trimmed)
		}
		key := strings.TrimRight(line[:colon], " \t")
		if key == "" || strings.ContainsAny(key, " \t#\"'") {
			return nil, bad("bad key %q (keys are snake_case names such as n_layer)", key)
		}
		rest := line[colon+1:]
		if rest != "" && rest[0] != ' ' && rest[0] != '\t' {
			return nil, bad("want a space after %q:", key)
		}
		value, err := yamlScalar(strings.TrimLeft(rest, " \t"))
		if err != nil {
			return nil, bad("%s: %v", key, err)
		}
		if prev, dup := seen[key]; dup {
			return nil, bad("%s is set again (first on line %d)", key, prev)
		}
		seen[key] = n
		out = append(out, yamlEntry{Key: key, Value: value, Line: n})
	}
	return out, nil
}

// yamlScalar reads the value part of a line: a quoted string, or a plain scalar up
// to a " #" comment. An empty value (or null, ~) is the empty string.
func yamlScalar(s string) (string, error) {
	if s == "" {
		return "", nil
	}
	var value, tail string
	switch s[0] {
	case '#':
		return "", nil // key:  # a comment
	case '"':
		var b strings.Builder
		i := 1
		for ; i < len(s) && s[i] != '"'; i++ {
			if s[i] != '\\' {
				b.WriteByte(s[i])
				continue
			}
			if i++; i == len(s) {
				break
			}
			switch s[i] {
			case '"', '\\', '/':
				b.WriteByte(s[i])
			case 'n':
				b.WriteByte('\n')
			case 't':
				b.WriteByte('\t')
			case 'r':
				b.WriteByte('\r')
			case 'u':
				if i+4 >= len(s) {
					return "", fmt.Errorf("short \\u escape in a double-quoted string")
				}
				r, err := strconv.ParseUint(s[i+1:i+5], 16, 16)
				if err != nil {
					return "", fmt.Errorf("bad \\u escape %q in a double-quoted string", s[i+1:i+5])
				}
				b.WriteRune(rune(r))
				i += 4
			default:
				return "", fmt.Errorf("unsupported escape \\%c in a double-quoted string", s[i])
			}
		}
		if i >= len(s) {
			return "", fmt.Errorf("unterminated double-quoted string")
		}
		value, tail = b.String(), s[i+1:]
	case '\'':
		var b strings.Builder
		i := 1
		for ; i < len(s); i++ {
			if s[i] == '\'' {
				if i+1 < len(s) && s[i+1] == '\'' { // '' is a quote
					b.WriteByte('\'')
					i++
					continue
				}
				break
			}
			b.WriteByte(s[i])
		}
		if i >= len(s) {
			return "", fmt.Errorf("unterminated single-quoted string")
		}
		value, tail = b.String(), s[i+1:]
	case '[', '{', '&', '*', '!', '|', '>', '@', '`':
		return "", fmt.Errorf("%q: only plain or quoted scalars are supported", s)
	default:
		value = s
		if k := strings.Index(s, " #"); k >= 0 {
			value = s[:k]
		} else if k := strings.Index(s, "\t#"); k >= 0 {
			value = s[:k]
		}
		value = strings.TrimRight(value, " \t")
		if strings.Contains(value, ": ") {
			return "", fmt.Errorf("%q: a plain value may not hold \": \" (quote it)", value)
		}
		switch value {
		case "null", "Null", "NULL", "~":
			value = ""
		}
		return value, nil
	}
	tail = strings.TrimLeft(tail, " \t")
	if tail != "" && tail[0] != '#' {
		return "", fmt.Errorf("unexpected %q after the quoted string", tail)
	}
	return value, nil
}

// LoadYAML applies a config file's keys to c and returns the keys it set. Unknown
// keys are errors naming the file and line. name is the file's name for messages.
func (c *Config) LoadYAML(data []byte, name string) ([]string, error) {
	entries, err := parseYAML(data, name)
	if err != nil {
		return nil, fmt.Errorf("train: config %w", err)
	}
	var keys []string
	for _, e := range entries {
		if _, ok := LookupField(e.Key); !ok || strings.Contains(e.Key, "-") {
			return nil, fmt.Errorf("train: config %s:%d: unknown key %q (known keys: %s)", name, e.Line, e.Key, strings.Join(keyNames(), ", "))
		}
		if err := c.Set(e.Key, e.Value); err != nil {
			return nil, fmt.Errorf("train: config %s:%d: %w", name, e.Line, err)
		}
		keys = append(keys, e.Key)
	}
	return keys, nil
}

// MarshalYAML writes every key, one per line, in Fields order; LoadYAML reads it
// back to the same Config.
func (c *Config) MarshalYAML() []byte {
	var b bytes.Buffer
	b.WriteString("# gptkit train: the resolved configuration of this run\n")
	for _, f := range fields {
		v := c.Get(f.Key)
		if f.Kind == reflect.String && needsQuotes(v) {
			v = yamlQuote(v)
		}
		fmt.Fprintf(&b, "%s: %s\n", f.Key, v)
	}
	return b.Bytes()
}

// needsQuotes reports whether a string value must be quoted to read back as itself.
func needsQuotes(v string) bool {
	if v == "" || v != strings.TrimSpace(v) || strings.ContainsAny(v, "#\"'\\\n\t:") {
		return true
	}
	switch v {
	case "null", "Null", "NULL", "~":
		return true
	}
	switch v[0] {
	case '-', '[', '{', '&', '*', '!', '|', '>', '@', '`', '%', '?':
		return true
	}
	return !utf8.ValidString(v)
}

// yamlQuote double-quotes v with the escapes yamlScalar reads.
func yamlQuote(v string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range v {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\r':
			b.WriteString(`\r`)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}
