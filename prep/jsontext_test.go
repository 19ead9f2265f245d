package prep

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func TestTextField(t *testing.T) {
	tests := []struct {
		name, line string
		text       string
		ok         bool
	}{
		{"plain", `{"text":"hello"}`, "hello", true},
		{"spaces everywhere", " \t{ \"text\" :\r\n\"hi\" } \n", "hi", true},
		{"other members first", `{"meta":{"a":[1,-2.5e+3,true,false,null,{}],"b":"x\"y"},"id":0,"text":"t"}`, "t", true},
		{"escapes", `{"text":"a\"b\\c\/d\be\ff\ng\rh\ti\u00e9\u20ac"}`, "a\"b\\c/d\be\ff\ng\rh\ti\u00e9\u20ac", true},
		{"surrogate pair", `{"text":"\ud83d\ude00"}`, "\U0001F600", true},
		{"lone high surrogate", `{"text":"a\ud83db"}`, "a\uFFFDb", true},
		{"lone low surrogate", `{"text":"\ude00"}`, "\uFFFD", true},
		{"high then non-surrogate escape", `{"text":"\ud83d\u0041"}`, "\uFFFDA", true},
		{"two highs then low", `{"text":"\ud83d\ud83d\ude00"}`, "\uFFFD\U0001F600", true},
		{"raw non-ASCII", `{"text":"café ☕ 𝄞"}`, "café ☕ 𝄞", true},
		{"invalid UTF-8", "{\"text\":\"a\xffb\xe2\x82\"}", "a\uFFFDb\uFFFD\uFFFD", true},
		{"invalid UTF-8 and escapes", "{\"text\":\"\xff\\n\xc3\"}", "\uFFFD\n\uFFFD", true},
		{"list", `{"text":["a","b\n",""]}`, "a\n\nb\n\n\n", true},
		{"empty list", `{"text":[ ]}`, "", true},
		{"empty string", `{"text":""}`, "", true},
		{"duplicate key: last wins", `{"text":"first","text":"second"}`, "second", true},
		{"escaped key", `{"te\u0078t":"x"}`, "x", true},
		{"missing", `{"body":"x"}`, "", false},
		{"empty object", `{}`, "", false},
		{"nested key does not count", `{"meta":{"text":"x"}}`, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			text, ok, err := TextField([]byte(tt.line), "text")
			if text != tt.text || ok != tt.ok || err != nil {
				t.Errorf("TextField = %q, %v, %v; want %q, %v, nil", text, ok, err, tt.text, tt.ok)
			}
			// Well-formed lines are the fast path's.
			if _, _, _, done := fastTextField([]byte(tt.line), "text"); !done {
				t.Errorf("the fast path gave up")
			}
		})
	}
}

func TestTextFieldErrors(t *testing.T) {
	tests := []struct {
		name, line string
		is         error
		msg        string
	}{
		{"truncated", `{"text":"a"`, ErrInvalidJSON, "invalid JSON at byte 11: unexpected end of JSON input"},
		{"bad character", `{"text":"a" x}`, ErrInvalidJSON, "invalid JSON at byte 13: invalid character 'x' after object key:value pair"},
		{"bad escape", `{"text":"a\x"}`, ErrInvalidJSON, "invalid JSON at byte 12: invalid character 'x' in string escape code"},
		{"control character", "{\"text\":\"a\x01\"}", ErrInvalidJSON, "invalid JSON at byte 11"},
		{"trailing data", `{"text":"a"} {}`, ErrInvalidJSON, "invalid JSON at byte 14: invalid character '{' after top-level value"},
		{"leading zero", `{"n":01,"text":"a"}`, ErrInvalidJSON, "invalid JSON at byte 7"},
		{"empty", ``, ErrInvalidJSON, "invalid JSON at byte 0: unexpected end of JSON input"},
		{"too deep", `{"a":` + strings.Repeat("[", 10001) + strings.Repeat("]", 10001) + `}`, ErrInvalidJSON, "exceeded max depth"},
		{"array", `["text"]`, ErrNotObject, "not a JSON object (it is an array)"},
		{"string", `"text"`, ErrNotObject, "not a JSON object (it is a string)"},
		{"null", ` null `, ErrNotObject, "not a JSON object (it is null)"},
		{"number", `17`, ErrNotObject, "not a JSON object (it is a number)"},
		{"number text", `{"text":17}`, ErrNotText, `field "text" is a number (17), want a string or a list of strings`},
		{"null text", `{"text":null}`, ErrNotText, `field "text" is null (null)`},
		{"boolean text", `{"text":true}`, ErrNotText, `field "text" is a boolean (true)`},
		{"object text", `{"text":{"a":"b"}}`, ErrNotText, `field "text" is an object ({"a":"b"})`},
		{"mixed list", `{"text":["a",1]}`, ErrNotText, `field "text" is an array holding a number (["a",1])`},
		{"last duplicate is not text", `{"text":"a","text":[null]}`, ErrNotText, `field "text" is an array holding null`},
		{"long value is cut", `{"text":{"a":"` + strings.Repeat("x", 100) + `"}}`, ErrNotText, `({"a":"xxxxxxxxxxxxxxxxxxxxxxxxxx...)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			text, ok, err := TextField([]byte(tt.line), "text")
			if err == nil || text != "" || ok {
				t.Fatalf("TextField = %q, %v, %v; want an error", text, ok, err)
			}
			if !errors.Is(err, tt.is) {
				t.Errorf("error %q is not %q", err, tt.is)
			}
			if !strings.Contains(err.Error(), tt.msg) {
				t.Errorf("error %q does not contain %q", err, tt.msg)
			}
		})
	}
}

// TestTextFieldErrorDetails checks what callers can get out of the errors.
func TestTextFieldErrorDetails(t *testing.T) {
	_, _, err := TextField([]byte(`{"text": 17 ,"meta":{}}`), "text")
	te, isType := errors.AsType[*TypeError](err)
	if !isType || te.Key != "text" || te.Type != "number" || te.Elem != "" || te.Value != "17" {
		t.Errorf("TypeError = %#v", te)
	}
	_, _, err = TextField([]byte(`{"text":"a",}`), "text")
	se, isSyntax := errors.AsType[*json.SyntaxError](err)
	if !isSyntax || se.Offset != 13 {
		t.Errorf("error %v: want a *json.SyntaxError at offset 13", err)
	}
}

// TestTextFieldParityCorpus checks every line of the parity corpus against
// encoding/json, all on the fast path.
func TestTextFieldParityCorpus(t *testing.T) {
	for i, line := range parityLines(t) {
		text, ok, err := TextField(line, "text")
		want, wantOK, wantErr := refTextField(line, "text")
		if text != want || ok != wantOK || err != nil || wantErr != nil {
			t.Fatalf("line %d: TextField = %q, %v, %v; encoding/json gives %q, %v, %v", i+1, text, ok, err, want, wantOK, wantErr)
		}
		if _, _, _, done := fastTextField(line, "text"); !done {
			t.Fatalf("line %d: the fast path gave up", i+1)
		}
	}
}

func TestBlankLine(t *testing.T) {
	for _, tc := range []struct {
		line  string
		blank bool
	}{
		{"", true}, {"\n", true}, {"\r\n", true}, {" \t \r\n", true}, {"   ", true},
		{"{}", false}, {" {}\n", false}, {"\f\n", false}, {"\v", false}, {"\u00a0", false}, {"\u0085", false}, {"x", false},
	} {
		if got := BlankLine([]byte(tc.line)); got != tc.blank {
			t.Errorf("BlankLine(%q) = %v, want %v", tc.line, got, tc.blank)
		}
	}
}
