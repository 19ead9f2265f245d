package checkpoint

import (
	"strings"
	"testing"
)

// FuzzParseManifest: ParseManifest never panics, and what it accepts survives a
// marshal and parse unchanged.
func FuzzParseManifest(f *testing.F) {
	good := &Manifest{Format: Format, Version: Version, Step: 12, Time: "2026-01-02T03:04:05Z", Files: []FileInfo{
		{Name: "model.safetensors", Size: 1234, SHA256: "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
		{Name: "state.json", Size: 0, SHA256: "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
	}}
	f.Add(good.marshal())
	f.Add([]byte(`{"format":"gptkit-checkpoint","version":1,"step":0,"files":[]}`))
	f.Add([]byte(`{"format":"gptkit-checkpoint","version":1,"step":-1,"files":null}`))
	f.Add([]byte(`{"format":"gptkit-checkpoint","version":1,"step":1,"files":[{"name":"../x","size":1,"sha256":"00"}]}`))
	f.Add([]byte(`{}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := ParseManifest(data)
		if err != nil {
			return
		}
		again, err := ParseManifest(m.marshal())
		if err != nil {
			t.Fatalf("re-parse of %q: %v", m.marshal(), err)
		}
		if again.Step != m.Step || len(again.Files) != len(m.Files) || again.Time != m.Time {
			t.Fatalf("round trip changed %+v to %+v", m, again)
		}
		for i := range m.Files {
			if again.Files[i] != m.Files[i] {
				t.Fatalf("file %d: %+v -> %+v", i, m.Files[i], again.Files[i])
			}
			if err := checkName(m.Files[i].Name); err != nil {
				t.Fatalf("accepted a bad name: %v", err)
			}
		}
	})
}

func TestParseManifestRejects(t *testing.T) {
	const sha = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
	for _, c := range []struct{ in, want string }{
		{`{"format":"x","version":1,"step":1,"files":[]}`, `format "x"`},
		{`{"format":"gptkit-checkpoint","version":2,"step":1,"files":[]}`, "version 2"},
		{`{"format":"gptkit-checkpoint","version":1,"step":-1,"files":[]}`, "negative step"},
		{`{"format":"gptkit-checkpoint","version":1,"step":1,"files":[],"x":1}`, "unknown field"},
		{`{"format":"gptkit-checkpoint","version":1,"step":1,"files":[]} {}`, "after the JSON"},
		{`{"format":"gptkit-checkpoint","version":1,"step":1,"files":[{"name":"a","size":-1,"sha256":"` + sha + `"}]}`, "negative size"},
		{`{"format":"gptkit-checkpoint","version":1,"step":1,"files":[{"name":"a","size":1,"sha256":"E3B0"}]}`, "not 64 lowercase hex"},
		{`{"format":"gptkit-checkpoint","version":1,"step":1,"files":[{"name":"a","size":1,"sha256":"` + sha + `"},{"name":"a","size":1,"sha256":"` + sha + `"}]}`, "listed twice"},
		{`{"format":"gptkit-checkpoint","version":1,"step":1,"files":[{"name":"../a","size":1,"sha256":"` + sha + `"}]}`, "starts with '.'"},
	} {
		if _, err := ParseManifest([]byte(c.in)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err %v, want %q", c.in, err, c.want)
		}
	}
}
