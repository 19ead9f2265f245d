package prep

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// pileLines are Pile-style records of every shape a subset filter meets: the
// comment says how FilterSet "Enron Emails" takes each.
var pileLines = []string{
	`{"text":"mail 1","meta":{"pile_set_name":"Enron Emails"}}`,     // kept
	`{"text":"web page","meta":{"pile_set_name":"Pile-CC"}}`,        // filtered
	`{"meta":{"pile_set_name":"Enron Emails"},"text":["mail","2"]}`, // kept (list text)
	`{"text":"no meta"}`, // no set name
	`{"text":"meta not an object","meta":"Enron Emails"}`,                                                                       // no set name
	`{"text":"no set name","meta":{"id":3}}`,                                                                                    // no set name
	`{"text":"set name a number","meta":{"pile_set_name":7}}`,                                                                   // no set name
	`{"text":"mail 3","meta":{"pile_set_name":"Enron\u0020Emails"}}`,                                                            // kept (escaped name)
	`{"text":"last meta counts","meta":{"pile_set_name":"Enron Emails"},"meta":{}}`,                                             // no set name
	`{"text":"last name counts","meta":{"pile_set_name":"Pile-CC","pile_set_name":"Enron Emails"}}`,                             // kept
	`{"text":"nested","meta":{"x":{"pile_set_name":"Enron Emails"}}}`,                                                           // no set name
	`{"text":"case","meta":{"Pile_Set_Name":"Enron Emails"}}`,                                                                   // no set name
	`{"text":"","meta":{"pile_set_name":"Enron Emails"}}`,                                                                       // empty
	`{"body":"other set, no text","meta":{"pile_set_name":"Pile-CC"}}`,                                                          // filtered, not bad
	`{"body":"our set, no text","meta":{"pile_set_name":"Enron Emails"}}`,                                                       // bad: missing text
	`{"text":"broken","meta":{"pile_set_name":"Enron Emails"}`,                                                                  // bad: invalid JSON
	`{"text":"deep","meta":{"a":` + strings.Repeat("[", 1200) + strings.Repeat("]", 1200) + `,"pile_set_name":"Enron Emails"}}`, // kept (slow path)
}

func TestReadDocsFilterSet(t *testing.T) {
	dir := t.TempDir()
	file := writeCorpusFile(t, dir, "pile.jsonl.zst", strings.Join(pileLines, "\n")+"\n")
	docs, stats, err := readAll(t, []string{file}, ReadOptions{FilterSet: "Enron Emails"})
	if err != nil {
		t.Fatal(err)
	}
	want := []Doc{{"mail 1", file, 1, 0, 0, 0}, {"mail\n\n2", file, 3, 0, 0, 0}, {"mail 3", file, 8, 0, 0, 0}, {"last name counts", file, 10, 0, 0, 0}, {"deep", file, 17, 0, 0, 0}}
	if !slices.Equal(docs, want) {
		t.Errorf("docs %+v\nwant %+v", docs, want)
	}
	if stats.Filtered != 9 || stats.NoMeta != 7 || stats.Empty != 1 || stats.Bad != 2 || stats.Docs != 5 || stats.Records() != int64(len(pileLines)) {
		t.Errorf("stats %+v", stats)
	}
	if c := stats.BadRecords.Counts; c[ReasonMissingText] != 1 || c[ReasonInvalidJSON] != 1 {
		t.Errorf("bad records %v", c)
	}
	checkSkipDocs(t, []string{file}, ReadOptions{FilterSet: "Enron Emails"}, docs, stats)

	// Each line on its own against encoding/json.
	for i, line := range pileLines {
		want, wantOK, wantErr := refStringMember([]byte(line), "meta", "pile_set_name")
		got, ok, err := StringMember([]byte(line), "meta", "pile_set_name")
		if got != want || ok != wantOK || (err != nil) != (wantErr != nil) {
			t.Errorf("line %d: StringMember = %q, %v, %v; encoding/json gives %q, %v, %v", i+1, got, ok, err, want, wantOK, wantErr)
		}
	}
}

func TestReadDocsFilterSetFormats(t *testing.T) {
	dir := t.TempDir()
	for _, file := range []string{
		writeCorpusFile(t, dir, "a.txt", "text"),
		writeZip(t, dir, "b.zip", []zipMember{{"a", "text"}}),
	} {
		_, _, err := readAll(t, []string{file}, ReadOptions{FilterSet: "Enron Emails"})
		if _, isFile := errors.AsType[*FileError](err); !isFile || !strings.Contains(err.Error(), "has none (filter JSONL or Parquet files") {
			t.Errorf("%s: %v", file, err)
		}
	}
}

func TestStringMember(t *testing.T) {
	tests := []struct {
		line string
		path []string
		s    string
		ok   bool
	}{
		{`{"a":"x"}`, []string{"a"}, "x", true},
		{`{"a":{"b":{"c":"\u00e9\n"}}}`, []string{"a", "b", "c"}, "é\n", true},
		{`{"a":{"b":1}}`, []string{"a", "b"}, "", false},
		{`{"a":["b"]}`, []string{"a", "b"}, "", false},
		{`{"a":{}}`, []string{"a", "b"}, "", false},
		{`{"a":"x"}`, nil, "", false},
		{"{\"a\":\"\xff\"}", []string{"a"}, "\uFFFD", true},
	}
	for _, tt := range tests {
		s, ok, err := StringMember([]byte(tt.line), tt.path...)
		if s != tt.s || ok != tt.ok || err != nil {
			t.Errorf("StringMember(%s, %q) = %q, %v, %v; want %q, %v", tt.line, tt.path, s, ok, err, tt.s, tt.ok)
		}
	}
	for _, line := range []string{`{"a":`, `[1]`, ``, `{"a":"x"}}`} {
		if _, _, err := StringMember([]byte(line)); err == nil {
			t.Errorf("StringMember(%s): no error", line)
		} else if !errors.Is(err, ErrInvalidJSON) && !errors.Is(err, ErrNotObject) {
			t.Errorf("StringMember(%s): %v", line, err)
		}
	}
}

func ExampleStringMember() {
	line := []byte(`{"text":"Subject: lunch","meta":{"pile_set_name":"Enron Emails"}}`)
	set, ok, err := StringMember(line, "meta", "pile_set_name")
	fmt.Println(set, ok, err)
	// Output: Enron Emails true <nil>
}
