package prep

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// refTextField is the reference TextField: plain encoding/json, decoding the whole
// line into generic values (numbers as json.Number, so that any valid number
// decodes).
func refTextField(line []byte, key string) (string, bool, error) {
	if !json.Valid(line) {
		return "", false, errors.New("invalid JSON")
	}
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return "", false, err
	}
	obj, isObject := v.(map[string]any)
	if !isObject {
		return "", false, errors.New("not an object")
	}
	x, ok := obj[key]
	if !ok {
		return "", false, nil
	}
	switch x := x.(type) {
	case string:
		return x, true, nil
	case []any:
		parts := make([]string, len(x))
		for i, e := range x {
			s, isString := e.(string)
			if !isString {
				return "", false, errors.New("list element is not a string")
			}
			parts[i] = s
		}
		return strings.Join(parts, "\n\n"), true, nil
	}
	return "", false, errors.New("not text")
}

// textFieldSeeds are lines for the fuzzer to start from: the tricky corners of JSON.
var textFieldSeeds = []string{
	`{"text":"hello"}`,
	` { "meta" : {"a":[1,2.5,-3e+7,{"b":null}],"c":true} , "text" : "x\ny" } ` + "\r\n",
	`{"text":["a","b",""]}`,
	`{"text":[]}`,
	`{"text":["a",1]}`,
	`{"text":17}`,
	`{"text":null}`,
	`{"text":{"a":"b"}}`,
	`{"text":"a","text":"b"}`,
	`{"text":"a","text":2}`,
	`{"text":2,"text":"a"}`,
	`{"te\u0078t":"escaped key"}`,
	`{"text":"\ud83d\ude00 \ud83d x \udc00 \ud83d\u0041 \ud83d\ud83d\ude00"}`,
	`{"text":"\"\\\/\b\f\n\r\t\u00e9\u20AC"}`,
	"{\"text\":\"bad \xff utf8 \xe2\x82\"}",
	"{\"text\":\"bad \xff\\n utf8\"}",
	"{\"t\xffxt\":\"x\"}",
	`{"text":"a\x"}`,
	`{"text":"a` + "\x01" + `"}`,
	`{"text":"a"`,
	`{"text":"a"}x`,
	`{"text":"a",}`,
	`{"n":01,"text":"a"}`,
	`{"n":-,"text":"a"}`,
	`{"n":1.,"text":"a"}`,
	`{"n":1e,"text":"a"}`,
	`{"n":tru,"text":"a"}`,
	`{"n":truex,"text":"a"}`,
	`{}`,
	`null`,
	`["text"]`,
	`"text"`,
	``,
	`{"other":"a"}`,
	`[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]`,
	`{"a":` + strings.Repeat("[", 1100) + strings.Repeat("]", 1100) + `,"text":"deep"}`,
	`{"text":"` + strings.Repeat("long line of text, ", 40) + `"}`,
}

// FuzzTextField checks TextField against encoding/json (refTextField) on any line:
// the same text, the same ok, an error exactly when the reference errs.
func FuzzTextField(f *testing.F) {
	for _, s := range textFieldSeeds {
		f.Add([]byte(s), "text")
	}
	f.Add([]byte(`{"body":"x","text":"y"}`), "body")
	f.Add([]byte(`{"":"empty key"}`), "")
	f.Fuzz(func(t *testing.T, line []byte, key string) {
		text, ok, err := TextField(line, key)
		wantText, wantOK, wantErr := refTextField(line, key)
		if text != wantText || ok != wantOK || (err != nil) != (wantErr != nil) {
			t.Fatalf("TextField(%q, %q) = %q, %v, %v; encoding/json gives %q, %v, %v",
				line, key, text, ok, err, wantText, wantOK, wantErr)
		}
	})
}
