package prep

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
)

// Errors from TextField (and so from ReadDocs), for errors.Is.
var (
	// ErrInvalidJSON: the line is not valid JSON.
	ErrInvalidJSON = errors.New("invalid JSON")
	// ErrNotObject: the line is valid JSON but not an object.
	ErrNotObject = errors.New("not a JSON object")
	// ErrNotText: the member holding the text is neither a string nor a list of
	// strings. The error is a *TypeError.
	ErrNotText = errors.New("not a string or a list of strings")
)

// ListSeparator joins the strings of a text given as a JSON list, as lm_dataformat
// (and so GPT-NeoX) does.
const ListSeparator = "\n\n"

// TextField returns the text in member key of the JSON object in line: the member's
// string value, or its strings joined with ListSeparator when the value is a list of
// strings. ok is false, with a nil error, when the object has no member key. When
// keys repeat, the last one counts.
//
// The result is exactly what encoding/json gives: escapes are decoded (a lone UTF-16
// surrogate becomes U+FFFD, counted as invalid UTF-8 is: such text cannot be UTF-8, and
// Python keeps the surrogate, which HF tokenizers refuse) and invalid UTF-8 becomes U+FFFD. Errors wrap
// ErrInvalidJSON (and the *json.SyntaxError, whose Offset, counted from 1, the
// message gives), ErrNotObject or ErrNotText (a *TypeError); on error, text is
// empty and ok false. Errors have no package prefix: they describe the line, and the
// caller says which line it was.
//
// A hand-written scanner handles valid objects whose text is a string or a list of
// strings, which is every line of a well-formed corpus; anything else (invalid JSON,
// a value of another type, deep nesting) goes to encoding/json, which also writes the
// error. See the package documentation for why.
func TextField(line []byte, key string) (text string, ok bool, err error) {
	text, ok, _, err = textField(line, key)
	return text, ok, err
}

// textField is TextField also saying whether the text held invalid UTF-8 (now U+FFFD).
func textField(line []byte, key string) (text string, ok, badUTF8 bool, err error) {
	if text, ok, badUTF8, done := fastTextField(line, key); done {
		return text, ok, badUTF8, nil
	}
	return slowTextField(line, key)
}

// AppendTextField is TextField appending the text to dst instead of returning a new
// string, so that a caller decoding line after line into one buffer allocates nothing
// per line (`tokenize encode --jsonl`). badUTF8 says whether the text held invalid
// UTF-8, now U+FFFD (the caller can count such lines, as a run does). On error, or when
// there is no member key, dst is returned as it was.
func AppendTextField(dst, line []byte, key string) (out []byte, ok, badUTF8 bool, err error) {
	var spans [1]span
	if scanObject(line, []string{key}, spans[:]) {
		raw := spans[0].value(line)
		if raw == nil {
			return dst, false, false, nil
		}
		if raw[0] == '"' {
			return appendString(dst, raw[1:len(raw)-1], spans[0].flags), true, spans[0].flags&strBadUTF8 != 0, nil
		}
	}
	// A list of strings, or not the fast path's: TextField's answer.
	text, ok, badUTF8, err := textField(line, key)
	return append(dst, text...), ok, badUTF8, err
}

// TypeError is ErrNotText with the details: which member, and what it held.
type TypeError struct {
	Key   string // the member's name
	Type  string // its JSON type: "number", "boolean", "null", "object" or "array"
	Elem  string // for an array: the JSON type of the first element that is not a string
	Value string // the value as written in the line, cut after 32 bytes (then ending in "...")
}

func (e *TypeError) Error() string {
	what := article(e.Type)
	if e.Elem != "" {
		what += " holding " + article(e.Elem)
	}
	return fmt.Sprintf("field %q is %s (%s), want a string or a list of strings", e.Key, what, e.Value)
}

// Unwrap returns ErrNotText.
func (e *TypeError) Unwrap() error { return ErrNotText }

// slowTextField is TextField by encoding/json: the fallback, and the one that writes
// the errors.
func slowTextField(line []byte, key string) (text string, ok, badUTF8 bool, err error) {
	members, err := slowMembers(line)
	if err != nil {
		return "", false, false, err
	}
	raw, ok := members[key]
	if !ok {
		return "", false, false, nil
	}
	text, badUTF8, err = textValue(trimSpace(raw), key)
	if err != nil {
		return "", false, false, err
	}
	return text, true, badUTF8, nil
}

// slowMembers decodes line, which should be a JSON object, into its members by
// encoding/json. Its errors wrap ErrInvalidJSON or ErrNotObject.
func slowMembers(line []byte) (map[string]json.RawMessage, error) {
	var members map[string]json.RawMessage
	if err := json.Unmarshal(line, &members); err != nil {
		if se, isSyntax := errors.AsType[*json.SyntaxError](err); isSyntax {
			return nil, fmt.Errorf("%w at byte %d: %w", ErrInvalidJSON, se.Offset, err)
		}
		return nil, fmt.Errorf("%w (it is %s)", ErrNotObject, article(jsonType(line)))
	}
	if members == nil { // the line is null
		return nil, fmt.Errorf("%w (it is null)", ErrNotObject)
	}
	return members, nil
}

// textValue decodes raw, the valid JSON value of member key, as text (see
// decodeText); the error is a *TypeError when it is not text.
func textValue(raw []byte, key string) (text string, badUTF8 bool, err error) {
	text, badUTF8, ok := decodeText(raw, stringFlags(raw))
	if !ok {
		return "", false, notText(raw, key)
	}
	return text, badUTF8, nil
}

// stringFlags returns scanString's flags for raw, a valid JSON value, if it is a
// string (else 0).
func stringFlags(raw []byte) uint8 {
	if len(raw) == 0 || raw[0] != '"' {
		return 0
	}
	_, flags, _ := scanString(raw, 0)
	return flags
}

// notText is the error for raw, the valid JSON value of member key, which is not text.
func notText(raw []byte, key string) *TypeError {
	e := &TypeError{Key: key, Type: jsonType(raw), Value: cut(raw, 32)}
	if e.Type == "array" {
		// The first element that is not a string: skip the strings before it.
		for i := skipSpace(raw, 1); i < len(raw); {
			if raw[i] != '"' {
				e.Elem = jsonType(raw[i:])
				break
			}
			end, _, _ := scanString(raw, i)
			i = skipSpace(raw, skipSpace(raw, end)+1) // past the ','
		}
	}
	return e
}

// memberNames returns the sorted names of the members of the JSON object in line
// (nil if it is not one), for error messages.
func memberNames(line []byte) []string {
	var members map[string]json.RawMessage
	if json.Unmarshal(line, &members) != nil {
		return nil
	}
	names := make([]string, 0, len(members))
	for name := range members {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// jsonType names the JSON type of the valid JSON value b by its first byte.
func jsonType(b []byte) string {
	b = trimSpace(b)
	if len(b) == 0 {
		return "nothing"
	}
	switch b[0] {
	case '{':
		return "object"
	case '[':
		return "array"
	case '"':
		return "string"
	case 't', 'f':
		return "boolean"
	case 'n':
		return "null"
	}
	return "number"
}

// article puts "a" or "an" before a JSON type name; null stays bare.
func article(typ string) string {
	switch typ {
	case "null", "nothing":
		return typ
	case "object", "array":
		return "an " + typ
	}
	return "a " + typ
}

// trimSpace trims JSON whitespace.
func trimSpace(b []byte) []byte { return bytes.Trim(b, " \t\r\n") }

// BlankLine reports whether a JSONL line (with or without its newline) is blank: empty,
// or nothing but JSON whitespace (spaces, tabs, CR, LF). The readers of JSONL corpora skip
// blank lines; any other line must hold a JSON object. Other Unicode spaces (form feed,
// vertical tab, U+00A0, ...) are not JSON whitespace, so a line of them is not blank.
func BlankLine(line []byte) bool {
	for _, c := range line {
		switch c {
		case ' ', '\t', '\r', '\n':
		default:
			return false
		}
	}
	return true
}

// cut returns b as a string, cut after n bytes (then ending in "...").
func cut(b []byte, n int) string {
	if len(b) <= n {
		return string(b)
	}
	return string(b[:n]) + "..."
}
