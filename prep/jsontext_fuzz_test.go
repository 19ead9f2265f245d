package prep

import (
	"bytes"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"
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

// surrogateEscape matches a \u escape of a UTF-16 surrogate (or text that looks like one).
var surrogateEscape = regexp.MustCompile(`\\u[dD][89a-fA-F]`)

// FuzzTextField checks TextField and AppendTextField against encoding/json
// (refTextField) on any line: the same text, the same ok, an error exactly when the
// reference errs.
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
		buf, ok, badUTF8, err := AppendTextField([]byte("prefix"), line, key)
		if string(buf) != "prefix"+wantText || ok != wantOK || (err != nil) != (wantErr != nil) {
			t.Fatalf("AppendTextField(prefix, %q, %q) = %q, %v, %v; encoding/json gives %q, %v, %v",
				line, key, buf, ok, err, wantText, wantOK, wantErr)
		}
		// Invalid UTF-8 in the text is in the line, or a surrogate escape is (a lone one
		// counts); a text without U+FFFD had none.
		if badUTF8 && (utf8.Valid(line) && !surrogateEscape.Match(line) || !ok || !strings.ContainsRune(wantText, utf8.RuneError)) {
			t.Fatalf("AppendTextField(prefix, %q, %q): invalid UTF-8 reported in %q", line, key, wantText)
		}
	})
}

// jsonStringSeeds are string contents (between the quotes) for FuzzJSONString: long
// enough for the 32-byte AVX2 steps, with escapes, non-ASCII and errors at the edges of
// a step.
var jsonStringSeeds = []string{
	"",
	`plain`,
	strings.Repeat("abcdefgh", 9),
	strings.Repeat(`line\n`, 20),
	strings.Repeat("x", 31) + `\"` + strings.Repeat("y", 40),
	strings.Repeat("x", 30) + `\\\/\b\f\n\r\t` + strings.Repeat("y", 40),
	strings.Repeat("x", 33) + `\u00e9\ud83d\ude00\ud83d` + strings.Repeat("z", 40),
	strings.Repeat("é☕𝄞", 20) + `\n` + strings.Repeat("a", 40),
	strings.Repeat("a", 40) + "\xff\xe2\x82" + strings.Repeat("b", 40),
	strings.Repeat("a", 40) + "\x01" + strings.Repeat("b", 40),
	strings.Repeat("a", 40) + `\x` + strings.Repeat("b", 40),
	strings.Repeat("a", 40) + `"` + strings.Repeat("b", 40),
	strings.Repeat("a", 63) + `\`,
}

// FuzzJSONString checks scanString and decodeString, with each vector level this CPU
// has (AVX-512, AVX2, the SWAR twins alone), against encoding/json on one string
// followed by more of a line (checkJSONString).
func FuzzJSONString(f *testing.F) {
	for _, s := range jsonStringSeeds {
		f.Add(s, `,"meta":{"pile_set_name":"Pile-CC"}}`)
	}
	f.Fuzz(func(t *testing.T, contents, rest string) {
		checkJSONString(t, `"`+contents+`"`, rest)
	})
}

// checkJSONString checks the JSON string str (quotes included), followed by rest in a
// line, at every vector level against encoding/json: the same validity, the same end,
// the same text.
func checkJSONString(t *testing.T, str, rest string) {
	t.Helper()
	line := []byte(str + rest)
	var want string
	wantErr := json.Unmarshal([]byte(str), &want)
	defer func(saved int) { jsonLevel = saved }(jsonLevel)
	for level := range jsonLevelSupported + 1 {
		jsonLevel = level
		end, flags, ok := scanString(line, 0)
		valid := ok && end == len(str)
		if valid != (wantErr == nil) {
			t.Fatalf("level %d: scanString(%q) = %d, %v, %v; encoding/json: %v", level, line, end, flags, ok, wantErr)
		}
		if !valid {
			continue
		}
		if got := decodeString(line[1:end-1], flags); got != want {
			t.Fatalf("level %d: decodeString(%q) = %q, want %q", level, str, got, want)
		}
	}
}

// TestJSONStringRandom runs checkJSONString on random strings dense in what the vector
// loops decide by masks: runs of backslashes, escapes at the edges of 32- and 64-byte
// blocks, quotes, \u, control and non-ASCII bytes.
func TestJSONStringRandom(t *testing.T) {
	pieces := []string{`\`, `\\`, `\n`, `\"`, `"`, `\u00e9`, `\ud83d\ude00`, `\x`, `\/`, "\x01", "é", "\xff", "a", "bc", "defghijklmnopqr", `\t`, "\t"}
	rng := rand.New(rand.NewPCG(20, 1))
	for range 30000 {
		var b strings.Builder
		for n := rng.IntN(120); b.Len() < n; {
			p := pieces[rng.IntN(len(pieces))]
			if p == `"` || p == "\x01" || p == `\x` || p == "\t" || p == `\` {
				if rng.IntN(8) != 0 { // mostly valid strings
					continue
				}
			}
			b.WriteString(p)
		}
		checkJSONString(t, `"`+b.String()+`"`, strings.Repeat(`,"x":1`, rng.IntN(12))+"}")
	}
}

// TestAppendTextFieldBadUTF8: AppendTextField says when the text it decoded held
// invalid UTF-8 (`tokenize encode --jsonl` counts those lines), on the fast path, a list
// and encoding/json's fallback, and not for invalid UTF-8 in another member.
func TestAppendTextFieldBadUTF8(t *testing.T) {
	deep := strings.Repeat("[", 1100) + strings.Repeat("]", 1100)
	for _, tc := range []struct {
		line string
		bad  bool
	}{
		{`{"text":"plain é"}`, false},
		{"{\"text\":\"a\xffb\"}", true},
		{"{\"text\":[\"x\",\"\xfe\"]}", true},
		{"{\"other\":\"\xff\",\"text\":\"ok\"}", false},
		{`{"a":` + deep + ",\"text\":\"\xc3\"}", true},
		{`{"a":` + deep + `,"text":"ok"}`, false},
		// A \u escape of a lone UTF-16 surrogate becomes U+FFFD, as encoding/json
		// decodes it, and counts as invalid UTF-8 (Python keeps the surrogate, which
		// cannot be UTF-8: HF tokenizers refuse the text); a pair is a character.
		{`{"text":"pair \ud83d\ude00 \uD83D\uDE00"}`, false},
		{`{"text":"high \ud800"}`, true},
		{`{"text":"low \udc00 x"}`, true},
		{`{"text":"two highs \ud800\ud83d\ude00"}`, true},
		{`{"text":"high then BMP \ud800\u0041"}`, true},
		{`{"text":"reversed \ude00\ud83d"}`, true},
		{`{"text":["x","\udfff"]}`, true},
		{`{"other":"\ud800","text":"ok"}`, false},
		{`{"a":` + deep + `,"text":"\ud800"}`, true},
	} {
		text, ok, bad, err := AppendTextField(nil, []byte(tc.line), "text")
		if err != nil || !ok || bad != tc.bad {
			t.Errorf("%.40q: %q ok=%v badUTF8=%v err=%v, want badUTF8=%v", tc.line, text, ok, bad, err, tc.bad)
		}
		if want, _, _ := TextField([]byte(tc.line), "text"); string(text) != want {
			t.Errorf("%.40q: AppendTextField %q, TextField %q", tc.line, text, want)
		}
		var v struct{ Text any }
		if json.Unmarshal([]byte(tc.line), &v) == nil {
			if s, isString := v.Text.(string); isString && string(text) != s {
				t.Errorf("%.40q: %q, encoding/json %q", tc.line, text, s)
			}
		}
	}
}
