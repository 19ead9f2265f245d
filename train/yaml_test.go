package train

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestLoadYAML(t *testing.T) {
	src := "---\n# a comment\nn_layer: 4   # trailing comment\nlr: 1e-3\nbias: false\ndata: \"./data/x y\"\nout: 'it''s'\n\nsplit: 969,30,1\nresume:\ninit_from: ~\nmax_steps: 2e3\n"
	c := Default()
	keys, err := c.LoadYAML([]byte(src), "x.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(keys, ","); got != "n_layer,lr,bias,data,out,split,resume,init_from,max_steps" {
		t.Errorf("keys %s", got)
	}
	if c.NLayer != 4 || c.LR != 1e-3 || c.Bias || c.Data != "./data/x y" || c.Out != "it's" || c.Split != "969,30,1" || c.Resume != "" || c.MaxSteps != 2000 {
		t.Errorf("config %+v", c)
	}
	for _, tc := range []struct{ src, want string }{
		{"n_layers: 4\n", "x.yaml:1: unknown key \"n_layers\""},
		{"lr: 1\nn-layer: 4\n", "x.yaml:2: unknown key \"n-layer\" (here: n_layer)"},
		{"num-layers: 4\n", "x.yaml:1: unknown key \"num-layers\" (here: n_layer)"},
		{"max_iters: 5000\nn_layer: 4\nlearning_rate: 1e-3\ncompile: False\n",
			"x.yaml:1: unknown key \"max_iters\" (here: max_steps); also unknown: line 3 \"learning_rate\" (here: lr), line 4 \"compile\" (here: nothing, there is no torch.compile here: remove it)"},
		{"n_layer: four\n", "x.yaml:1: n_layer: \"four\" is not an integer"},
		{"n_layer: 4.5\n", "not an integer"},
		{"bias: yes\n", "not a boolean"},
		{"lr: 1\nlr: 2\n", "x.yaml:2: lr is set again (first on line 1)"},
		{"model:\n  n_layer: 4\n", "x.yaml:2: model: a mapping is not a value: a config is a flat list of key: value lines (no nesting)"},
		{"- n_layer\n", "x.yaml:1: want key: value lines, got a list"},
		{"n_layer 4\n", "x.yaml:1: want key: value"},
		{"data: [a, b]\n", "x.yaml:1: data: a list is not a value: only plain or quoted scalars"},
		{"lr: &a 1\nmin_lr: *a\n", "x.yaml:2: min_lr: an alias is not a value"},
		{"data: \"abc\n", "x.yaml:1: found unexpected end of stream"},
		{"data: \"a\" b\n", "x.yaml:1: did not find expected key"},
		{"lr: 1\ndata: \"a\" b\n", "x.yaml:2: did not find expected key"},
		{"lr:1\n", "a space must follow the colon"},
		{"a: b: c\n", "x.yaml:1: mapping values are not allowed"},
		{"lr: 1\n\tn_layer: 2\n", "x.yaml:2: found a tab character that violates indentation"},
		{"lr: nan\n", "not a number"},
		{"---\nlr: 1\n---\nlr: 2\n", "one YAML document"},
	} {
		c := Default()
		_, err := c.LoadYAML([]byte(tc.src), "x.yaml")
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want %q", tc.src, err, tc.want)
		}
	}
}

// Every key another trainer's config has that foreignKeys maps names a key of
// Config, or says there is none ("nothing") or what does it instead ("the").
func TestForeignKeys(t *testing.T) {
	for from, here := range foreignKeys {
		if _, ok := LookupField(from); ok {
			t.Errorf("%s is a key here: no hint needed", from)
		}
		word, _, _ := strings.Cut(here, " ")
		word = strings.TrimRight(word, ",;")
		if _, ok := LookupField(word); !ok && word != "nothing" && word != "the" {
			t.Errorf("%s → %q: %q is no key", from, here, word)
		}
	}
}

// TestMarshalYAMLRoundTrip: MarshalYAML reads back to the same Config, odd strings
// included.
func TestMarshalYAMLRoundTrip(t *testing.T) {
	c := Default()
	c.Data = "s3://bucket/a b#c: 'd' \"e\"\t\\ \x01 é"
	c.Out = "-x"
	c.InitFrom = "null"
	c.Dropout = 0.2
	c.LR = 6e-4
	back := Default()
	back.Resume = "something else"
	if _, err := back.LoadYAML(c.MarshalYAML(), "config.yaml"); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, c) {
		t.Errorf("round trip:\n%+v\nwant\n%+v\n%s", back, c, c.MarshalYAML())
	}
}

// TestConfigs: every file in configs/ loads, validates (with a data directory) and
// says what the issue asks of it.
func TestConfigs(t *testing.T) {
	files, err := filepath.Glob("../configs/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no configs: %v", err)
	}
	got := map[string]Config{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		c := Default()
		if _, err := c.LoadYAML(data, f); err != nil {
			t.Fatal(err)
		}
		if c.Data == "" {
			c.Data = "x"
		}
		if err := c.Validate(); err != nil {
			t.Errorf("%s: %v", f, err)
		}
		got[filepath.Base(f)] = c
	}
	baby := got["shakespeare-char.yaml"]
	if b := baby; b.NLayer != 4 || b.NHead != 4 || b.NEmbd != 128 || b.BlockSize != 64 || b.BatchSize != 12 || b.GradAccum != 1 ||
		b.MaxSteps != 2000 || b.LR != 1e-3 || b.MinLR != 1e-4 || b.WarmupSteps != 100 || b.LRDecaySteps != 2000 || b.Dropout != 0 ||
		b.EvalSteps != 20 || b.EvalEvery != 250 || b.WeightDecay != 0.1 || b.Beta1 != 0.9 || b.Beta2 != 0.99 || b.GradClip != 1 || b.Bias {
		t.Errorf("shakespeare-char.yaml: %+v", b)
	}
	gpu := got["shakespeare-char-gpu.yaml"]
	if g := gpu; g.NLayer != 6 || g.NHead != 6 || g.NEmbd != 384 || g.BlockSize != 256 || g.BatchSize != 64 || g.Dropout != 0.2 ||
		g.LR != 1e-3 || g.MaxSteps != 5000 || g.LRDecaySteps != 5000 || g.MinLR != 1e-4 || g.WarmupSteps != 100 || g.Beta2 != 0.99 ||
		g.EvalEvery != 250 || g.EvalSteps != 200 {
		t.Errorf("shakespeare-char-gpu.yaml: %+v", g)
	}
	if g := got["gpt2-124m.yaml"]; g.NLayer != 12 || g.NHead != 12 || g.NEmbd != 768 || g.BlockSize != 1024 || g.LR != 6e-4 || g.MinLR != 6e-5 ||
		g.BatchSize*g.GradAccum != 480 || g.MaxSteps != 600000 || g.Beta2 != 0.95 {
		t.Errorf("gpt2-124m.yaml: %+v", g)
	}
}

// FuzzLoadYAML: the reader never panics, and whatever it accepts writes back
// (MarshalYAML) to a file that reads to the same Config.
func FuzzLoadYAML(f *testing.F) {
	for _, s := range []string{
		"n_layer: 4\nlr: 1e-3\n", "data: \"a\\\"b\\u0001\"\n", "out: 'x''y' # c\n", "---\nbias: true\n",
		"model:\n  x: 1\n", "a: b: c", "data: #x\n", "seed: 99999999999\n", "\ufeffn_head: 2\r\n",
	} {
		f.Add([]byte(s))
	}
	files, _ := filepath.Glob("../configs/*.yaml")
	for _, p := range files {
		if data, err := os.ReadFile(p); err == nil {
			f.Add(data)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c := Default()
		if _, err := c.LoadYAML(data, "fuzz.yaml"); err != nil {
			return
		}
		back := Default()
		out := c.MarshalYAML()
		if _, err := back.LoadYAML(out, "back.yaml"); err != nil {
			t.Fatalf("MarshalYAML output does not load: %v\n%s", err, out)
		}
		if !reflect.DeepEqual(back, c) && !strings.ContainsRune(string(data), '\uFFFD') {
			t.Fatalf("round trip:\n%+v\nwant\n%+v", back, c)
		}
	})
}
