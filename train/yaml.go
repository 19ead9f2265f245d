package train

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"reflect"
	"regexp"
	"strings"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
)

// A config file is a flat YAML mapping of scalars, read with go.yaml.in/yaml/v3:
//
//	# nanoGPT's baby GPT
//	n_layer: 4
//	lr: 1e-3          # comments run to the end of the line
//	data: "./data/shakespeare"
//
// Values are plain or quoted scalars (null and ~ are empty); nesting, lists, aliases,
// several documents and a repeated key are errors naming the file and line, and so is
// an unknown key.

// yamlEntry is one key: value pair of a config file.
type yamlEntry struct {
	Key, Value string
	Line       int
}

// yamlLine is the line prefix of the YAML library's messages ("yaml: line 3: ...").
var yamlLine = regexp.MustCompile(`^yaml: (line \d+: )?`)

// parseYAML reads a flat mapping of scalars. name is used in error messages.
func parseYAML(data []byte, name string) ([]yamlEntry, error) {
	if !utf8.Valid(data) {
		return nil, fmt.Errorf("%s: not UTF-8 text", name)
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, nil // empty, or comments only
		}
		return nil, yamlError(data, name, err)
	}
	var next yaml.Node
	if err := dec.Decode(&next); err == nil {
		return nil, fmt.Errorf("%s:%d: a config file holds one YAML document", name, next.Line)
	} else if !errors.Is(err, io.EOF) {
		return nil, yamlError(data, name, err)
	}
	root := &doc
	if root.Kind == yaml.DocumentNode && len(root.Content) == 1 {
		root = root.Content[0]
	}
	at := func(n *yaml.Node, format string, args ...any) error {
		return fmt.Errorf("%s:%d: %s", name, n.Line, fmt.Sprintf(format, args...))
	}
	switch root.Kind {
	case yaml.MappingNode:
	case yaml.ScalarNode:
		if strings.Contains(root.Value, ":") {
			return nil, at(root, "want key: value, got %q (a space must follow the colon)", root.Value)
		}
		if root.Tag == "!!null" {
			return nil, nil
		}
		return nil, at(root, "want key: value, got %q", root.Value)
	default:
		return nil, at(root, "want key: value lines, got %s", kindName(root))
	}
	var out []yamlEntry
	seen := map[string]int{}
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		if k.Kind != yaml.ScalarNode || k.Value == "" || strings.ContainsAny(k.Value, " \t#\"'\n") {
			return nil, at(k, "bad key %q (keys are snake_case names such as n_layer)", k.Value)
		}
		if v.Kind != yaml.ScalarNode {
			hint := "only plain or quoted scalars are supported"
			if v.Kind == yaml.MappingNode {
				hint = "a config is a flat list of key: value lines (no nesting)"
			}
			return nil, at(v, "%s: %s is not a value: %s", k.Value, kindName(v), hint)
		}
		if prev, dup := seen[k.Value]; dup {
			return nil, at(k, "%s is set again (first on line %d)", k.Value, prev)
		}
		seen[k.Value] = k.Line
		value := v.Value
		if v.Tag == "!!null" {
			value = ""
		}
		out = append(out, yamlEntry{Key: k.Value, Value: value, Line: k.Line})
	}
	return out, nil
}

// yamlError puts the YAML library's syntax error in file:line form. The library's own
// line numbers are those of the enclosing construct, sometimes 0-based, sometimes left
// out, so the line is found here: the one after the longest prefix of the file that
// still parses (a string left open on line 3 is reported on line 3).
func yamlError(data []byte, name string, err error) error {
	msg := yamlLine.ReplaceAllString(err.Error(), "")
	lines := bytes.SplitAfter(data, []byte("\n"))
	if len(lines) > 1000 {
		return fmt.Errorf("%s: %s", name, strings.TrimPrefix(err.Error(), "yaml: "))
	}
	bad := len(lines)
	for bad > 1 && !parses(bytes.Join(lines[:bad-1], nil)) {
		bad--
	}
	return fmt.Errorf("%s:%d: %s", name, bad, msg)
}

// parses reports whether data is well-formed YAML (whatever it holds).
func parses(data []byte) bool {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	for {
		var n yaml.Node
		if err := dec.Decode(&n); err != nil {
			return errors.Is(err, io.EOF)
		}
	}
}

// kindName says what a node is, for messages.
func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.SequenceNode:
		return "a list"
	case yaml.MappingNode:
		return "a mapping"
	case yaml.AliasNode:
		return "an alias"
	}
	return "a scalar"
}

// LoadYAML applies a config file's keys to c and returns the keys it set. Unknown
// keys are errors naming the file and line. name is the file's name for messages.
func (c *Config) LoadYAML(data []byte, name string) ([]string, error) {
	entries, err := parseYAML(data, name)
	if err != nil {
		return nil, fmt.Errorf("train: config %w", err)
	}
	if err := unknownKeys(entries, name); err != nil {
		return nil, err
	}
	var keys []string
	for _, e := range entries {
		if err := c.Set(e.Key, e.Value); err != nil {
			return nil, fmt.Errorf("train: config %s:%d: %w", name, e.Line, err)
		}
		keys = append(keys, e.Key)
	}
	return keys, nil
}

// unknownKeys names every key of entries that is no Config key, at once (a config
// carried over from nanoGPT or GPT-NeoX has several), with its name here when
// another trainer's config uses it; nil when there is none.
func unknownKeys(entries []yamlEntry, name string) error {
	var unknown []string
	first := 0
	for _, e := range entries {
		if _, ok := LookupField(e.Key); ok && !strings.Contains(e.Key, "-") {
			continue
		}
		msg := fmt.Sprintf("%q", e.Key)
		snake := strings.ReplaceAll(e.Key, "-", "_")
		if here, ok := foreignKeys[snake]; ok {
			msg += " (here: " + here + ")"
		} else if _, ok := LookupField(snake); ok {
			msg += " (here: " + snake + ")"
		}
		if first == 0 {
			first = e.Line
			unknown = append(unknown, "unknown key "+msg)
		} else {
			unknown = append(unknown, fmt.Sprintf("line %d %s", e.Line, msg))
		}
	}
	if len(unknown) == 0 {
		return nil
	}
	also := ""
	if len(unknown) > 1 {
		also = "; also unknown: " + strings.Join(unknown[1:], ", ")
	}
	return fmt.Errorf("train: config %s:%d: %s%s (known keys: %s)", name, first, unknown[0], also, strings.Join(keyNames(), ", "))
}

// MarshalYAML writes every key, one per line, in Fields order; LoadYAML reads it
// back to the same Config.
func (c *Config) MarshalYAML() []byte {
	m := &yaml.Node{Kind: yaml.MappingNode, HeadComment: "gptkit train: the resolved configuration of this run"}
	for _, f := range fields {
		// Strings carry their tag, so that the library quotes one that would read as a
		// number, a boolean or null; numbers and booleans go plain.
		tag := ""
		if f.Kind == reflect.String {
			tag = "!!str"
		}
		v := c.Get(f.Key)
		m.Content = append(m.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: f.Key}, &yaml.Node{Kind: yaml.ScalarNode, Tag: tag, Value: v})
	}
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	if err := enc.Encode(m); err != nil {
		panic(fmt.Sprintf("train: MarshalYAML: %v", err)) // a mapping of scalars always encodes
	}
	enc.Close()
	return b.Bytes()
}
