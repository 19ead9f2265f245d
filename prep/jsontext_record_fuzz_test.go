package prep

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"
)

// refDecode decodes line with plain encoding/json into generic values (numbers as
// json.Number, so that any valid number decodes).
func refDecode(line []byte) (map[string]any, error) {
	if !json.Valid(line) {
		return nil, errors.New("invalid JSON")
	}
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	obj, isObject := v.(map[string]any)
	if !isObject {
		return nil, errors.New("not an object")
	}
	return obj, nil
}

// refStringMember is the reference StringMember: encoding/json, then the path
// through the generic values.
func refStringMember(line []byte, path ...string) (string, bool, error) {
	obj, err := refDecode(line)
	if err != nil {
		return "", false, err
	}
	var v any = obj
	for _, name := range path {
		m, isObject := v.(map[string]any)
		if !isObject {
			return "", false, nil
		}
		if v, isObject = m[name]; !isObject {
			return "", false, nil
		}
	}
	s, isString := v.(string)
	return s, isString && len(path) > 0, nil
}

// metaSeeds are lines for the fuzzers to start from: the corners of Pile metadata.
var metaSeeds = []string{
	`{"text":"a","meta":{"pile_set_name":"Enron Emails"}}`,
	`{"meta":{"pile_set_name":"Enron\u0020Emails","id":[1,{"x":null}]},"text":["a","b"]}`,
	`{"text":"a","meta":{"pile_set_name":"A"},"meta":{}}`,
	`{"text":"a","meta":{"pile_set_name":"A","pile_set_name":"B"}}`,
	`{"text":"a","meta":"Enron Emails"}`,
	`{"text":"a","meta":null}`,
	`{"text":"a","meta":{"pile_set_name":7}}`,
	`{"text":"a","meta":{"pile_set_name":"\ud83d x \xff"}}`,
	`{"text":"a","me\u0074a":{"pile_set_n\u0061me":"E"}}`,
	`{"text":"a","meta":{"pile_set_name":"E"}`,
	`{"text":"a","meta":{"pile_set_name":"E"}}x`,
	`{"text":"a","meta":{"a":` + string(bytes.Repeat([]byte("["), 1100)) + string(bytes.Repeat([]byte("]"), 1100)) + `,"pile_set_name":"deep"}}`,
	`[{"meta":{"pile_set_name":"E"}}]`,
	`{}`,
}

// FuzzStringMember checks StringMember, and the one-pass record scan ReadDocs uses
// (scanRecord: the text and the set name together), against encoding/json.
func FuzzStringMember(f *testing.F) {
	for _, s := range append(metaSeeds, textFieldSeeds...) {
		f.Add([]byte(s), "text", "meta", "pile_set_name", "Enron Emails")
	}
	f.Add([]byte(`{"a":{"b":"c"}}`), "x", "a", "b", "c")
	f.Fuzz(func(t *testing.T, line []byte, key, meta, set, want string) {
		// StringMember on a path of one and of two members.
		s, ok, err := StringMember(line, meta, set)
		ws, wok, werr := refStringMember(line, meta, set)
		if s != ws || ok != wok || (err != nil) != (werr != nil) {
			t.Fatalf("StringMember(%q, %q, %q) = %q, %v, %v; encoding/json gives %q, %v, %v", line, meta, set, s, ok, err, ws, wok, werr)
		}
		s, ok, err = StringMember(line, key)
		ws, wok, werr = refStringMember(line, key)
		if s != ws || ok != wok || (err != nil) != (werr != nil) {
			t.Fatalf("StringMember(%q, %q) = %q, %v, %v; encoding/json gives %q, %v, %v", line, key, s, ok, err, ws, wok, werr)
		}

		// scanRecord: the text as TextField, the set name as StringMember.
		rec, err := scanRecord(line, key, true)
		if (err != nil) != (werr != nil) {
			t.Fatalf("scanRecord(%q): error %v, encoding/json's %v", line, err, werr)
		}
		if err != nil {
			return
		}
		wantText, wantOK, wantErr := refTextField(line, key)
		var text string
		var textErr error
		if rec.text != nil {
			var bad bool
			text, bad, textErr = rec.decode(nil)
			// Into an arena (ReadBatches): the same text, kept as the arena goes on.
			arena := &textArena{buf: make([]byte, 0, 40)}
			inArena, badInArena, arenaErr := rec.decode(arena)
			next, _, _ := rec.decode(arena)
			if inArena != text || badInArena != bad || (arenaErr != nil) != (textErr != nil) || next != text {
				t.Fatalf("scanRecord(%q): decoded into an arena %q, %v, %v (then %q); without %q, %v, %v", line, inArena, badInArena, arenaErr, next, text, bad, textErr)
			}
			if isString, empty := rec.emptyString(); isString && empty != (text == "") {
				t.Fatalf("scanRecord(%q): emptyString says %v for %q", line, empty, text)
			}
		}
		if text != wantText || (rec.text != nil && textErr == nil) != wantOK || (textErr != nil) != (wantErr != nil) {
			t.Fatalf("scanRecord(%q, %q): text %q, present %v, err %v; encoding/json gives %q, %v, %v",
				line, key, text, rec.text != nil, textErr, wantText, wantOK, wantErr)
		}
		name, named, _ := refStringMember(line, metaKey, setKey)
		if gotNamed, equal := rec.setIs(want); gotNamed != named || equal != (named && name == want) {
			t.Fatalf("scanRecord(%q).setIs(%q) = %v, %v; encoding/json's set name is %q, %v", line, want, gotNamed, equal, name, named)
		}
	})
}

// TestRecordInvalidUTF8 checks that scanRecord says when a text held invalid UTF-8,
// on the fast path and the slow one.
func TestRecordInvalidUTF8(t *testing.T) {
	deep := `,"x":` + string(bytes.Repeat([]byte("["), 1100)) + string(bytes.Repeat([]byte("]"), 1100))
	for _, tt := range []struct {
		line string
		bad  bool
	}{
		{`{"text":"fine \u00e9 \ud83d\ude00"}`, false},
		{`{"text":"lone \u00e9 \ud83d"}`, true}, // a lone surrogate: U+FFFD, as Python cannot give HF
		{`{"text":["a","lone \udc00"]}`, true},
		{"{\"text\":\"bad \xe9\"}", true},
		{"{\"text\":[\"a\",\"bad \xe9\"]}", true},
		{"{\"text\":\"fine\",\"meta\":\"\xff\"}", false},
		{"{\"text\":\"bad \xff\"" + deep + "}", true},
		{"{\"text\":\"fine\"" + deep + "}", false},
	} {
		rec, err := scanRecord([]byte(tt.line), "text", true)
		if err != nil {
			t.Fatal(err)
		}
		for _, arena := range []*textArena{nil, {}} {
			if _, bad, err := rec.decode(arena); bad != tt.bad || err != nil {
				t.Errorf("%.40q (arena %v): invalid UTF-8 %v, want %v (err %v)", tt.line, arena != nil, bad, tt.bad, err)
			}
		}
	}
}
