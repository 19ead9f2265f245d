package fetch

import (
	"maps"
	"strings"
	"testing"
)

func TestParseSHA256SUMS(t *testing.T) {
	a, b := strings.Repeat("a", 64), strings.Repeat("b", 64)
	input := "# made by sha256sum\n" +
		a + "  train/00.jsonl.zst\n" +
		"\n" +
		strings.ToUpper(b) + " *val.jsonl.zst\r\n" +
		a + "  ./test.jsonl.zst\n" +
		"   \n" +
		"SHA256 (enwik8.zip) = " + b + "\n" +
		"\\" + a + "  odd\\\\name\\n\n" +
		a + "  name with  spaces\n" +
		a + "  train/00.jsonl.zst\n" // the same again is fine
	got, err := ParseSHA256SUMS([]byte(input))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"train/00.jsonl.zst": a,
		"val.jsonl.zst":      b,
		"test.jsonl.zst":     a,
		"enwik8.zip":         b,
		"odd\\name\n":        a,
		"name with  spaces":  a,
	}
	if !maps.Equal(got, want) {
		t.Errorf("got %v\nwant %v", got, want)
	}
	if got, err := ParseSHA256SUMS(nil); err != nil || len(got) != 0 {
		t.Errorf("empty input: %v, %v", got, err)
	}
}

func TestParseSHA256SUMSErrors(t *testing.T) {
	a := strings.Repeat("a", 64)
	tests := []struct {
		name, input string
		want        []string
	}{
		{"short sum", "# x\nabc  file\n", []string{"line 2", "64 hex digits"}},
		{"one space", a + " file\n", []string{"line 1", "two spaces"}},
		{"not hex", strings.Repeat("g", 64) + "  file\n", []string{"line 1", "not a sha256"}},
		{"no name", a + "  \n", []string{"line 1", "no file name"}},
		{"bad BSD form", "SHA256 (file) " + a + "\n", []string{"line 1", "SHA256 (name) = HEX"}},
		{"short BSD sum", "SHA256 (file) = abc\n", []string{"line 1", "not a sha256"}},
		{"conflict", a + "  f\n\n" + strings.Repeat("b", 64) + "  ./f\n", []string{"line 3", "first on line 1", "another sha256"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseSHA256SUMS([]byte(tt.input))
			errorContains(t, err, tt.want...)
		})
	}
}

func TestParseContentRange(t *testing.T) {
	tests := []struct {
		in          string
		start, size int64
		ok          bool
	}{
		{"bytes 100-199/200", 100, 200, true},
		{"bytes 0-0/*", 0, -1, true},
		{"bytes */200", -1, 200, true},
		{"bytes 1-2", 0, 0, false},
		{"items 1-2/3", 0, 0, false},
		{"bytes x-2/3", 0, 0, false},
		{"bytes 1-2/x", 0, 0, false},
		{"bytes 5-10/-7", 0, 0, false},
		{"bytes +5-10/20", 0, 0, false},
		{"bytes 10-5/20", 0, 0, false},
		{"bytes 0-20/20", 0, 0, false},
		{"bytes 0-19/20", 0, 20, true},
		{"bytes */*", 0, 0, false},
		{"bytes 1-/3", 0, 0, false},
		{"bytes 0-0/1", 0, 1, true},
		{"bytes 00-01/02", 0, 2, true},
		{"bytes 9223372036854775806-9223372036854775806/9223372036854775807", 9223372036854775806, 9223372036854775807, true},
		{"bytes */0", -1, 0, true},
		{"Bytes 100-199/200", 100, 200, true}, // unit names are case-insensitive
		{"BYTES 100-199/200", 100, 200, true},
	}
	for _, tt := range tests {
		start, size, ok := ParseContentRange(tt.in)
		if !ok {
			start, size = 0, 0
		}
		if start != tt.start || size != tt.size || ok != tt.ok {
			t.Errorf("ParseContentRange(%q) = %d, %d, %v; want %d, %d, %v", tt.in, start, size, ok, tt.start, tt.size, tt.ok)
		}
	}
}

// FuzzParseContentRange: a header from the network never panics, and what is accepted
// is a range that can be: START ≥ 0 (or -1 for "*"), SIZE ≥ 0 (or -1 for "*"), START
// below a known SIZE.
func FuzzParseContentRange(f *testing.F) {
	for _, s := range []string{"bytes 100-199/200", "bytes 0-0/*", "bytes */200", "bytes 1-2", "bytes 9223372036854775807-9223372036854775807/*"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		start, size, ok := ParseContentRange(s)
		if !ok {
			return
		}
		if start < -1 || size < -1 || start == -1 && size < 0 || size >= 0 && start >= size {
			t.Fatalf("ParseContentRange(%q) = %d, %d, ok", s, start, size)
		}
	})
}

// FuzzParseSHA256SUMS: a checksum list from the network never panics, and every sum
// accepted is 64 hex digits under a non-empty name.
func FuzzParseSHA256SUMS(f *testing.F) {
	sum := strings.Repeat("ab", 32)
	for _, s := range []string{sum + "  a.txt\n", sum + " *./b.bin\r\n# c\n\n", "SHA256 (x y) = " + sum + "\n", "\\" + sum + "  a\\nb\n", "zz  a\n", sum + "  a\n" + strings.Repeat("cd", 32) + "  a\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		sums, err := ParseSHA256SUMS(data)
		if err != nil {
			return
		}
		for name, s := range sums {
			if len(s) != 64 || strings.Trim(strings.ToLower(s), "0123456789abcdef") != "" {
				t.Fatalf("%q: sum %q of %q is not 64 hex digits", data, s, name)
			}
		}
	})
}
