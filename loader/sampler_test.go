package loader

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"gptkit/shards"
)

// testSamples is a Samples over a small random dataset.
func testSamples(t *testing.T) *Samples {
	t.Helper()
	rnd := rand.New(rand.NewPCG(5, 6))
	d := makeDataset(t, randomDocs(rnd, 80), 3, shards.Uint16)
	s, err := NewSamples(d, [2]int64{0, 80}, 8, 200, 1234, OrderNeoX)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// testSources are the sources the sampler tests run on: plain Samples, and a
// blend of three datasets opened through Open.
func testSources(t *testing.T) map[string]Source {
	t.Helper()
	rnd := rand.New(rand.NewPCG(41, 42))
	base := t.TempDir()
	var parts []string
	for c, n := range []int{40, 70, 30} {
		dir := writeDataset(t, filepath.Join(base, fmt.Sprint(c)), randomDocs(rnd, n), 2, shards.Uint16, nil, "fp")
		parts = append(parts, fmt.Sprintf("%d:%s", c+1, dir))
	}
	d := openData(t, Options{Data: strings.Join(parts, ","), SeqLen: 8, Seed: 5, Order: OrderDefault, Split: "1", NumSamples: [3]int64{150, 0, 0}})
	return map[string]Source{"samples": testSamples(t), "blend": d.Train}
}

// drain runs sampler until it errors and returns its micro-batches.
func drain(t *testing.T, sm *Sampler, limit int) [][][]int {
	t.Helper()
	var out [][][]int
	for len(out) < limit {
		b, err := sm.Next(nil)
		if err != nil {
			if !strings.Contains(err.Error(), "only") {
				t.Fatal(err)
			}
			break
		}
		out = append(out, b)
	}
	return out
}

// TestSamplerRanks checks that ranks 0..W-1 together, micro-batch by micro-batch,
// give the single-process sequence 0, 1, 2, ...
func TestSamplerRanks(t *testing.T) {
	for name, s := range testSources(t) {
		t.Run(name, func(t *testing.T) {
			for _, W := range []int{1, 2, 3, 4} {
				for _, M := range []int{1, 2, 5} {
					per := make([][][][]int, W)
					for r := range W {
						per[r] = drain(t, &Sampler{Samples: s, Rank: r, World: W, Micro: M, GradAccum: 2}, 1<<30)
					}
					steps := len(per[0])
					if want := s.Len() / int64(M*W); int64(steps) != want {
						t.Fatalf("W=%d M=%d: %d micro-batches, want %d", W, M, steps, want)
					}
					i := int64(0)
					for g := range steps {
						for r := range W {
							if len(per[r]) != steps || len(per[r][g]) != M {
								t.Fatalf("W=%d M=%d rank %d: ragged output", W, M, r)
							}
							for _, got := range per[r][g] {
								if want := s.Sample(i, nil); !slices.Equal(got, want) {
									t.Fatalf("W=%d M=%d g=%d rank %d: sample %d differs", W, M, g, r, i)
								}
								i++
							}
						}
					}
				}
			}
		})
	}
}

// TestSamplerResume checks that a sampler started at a cursor continues exactly
// like one that ran up to it, and that the cursor counts global samples.
func TestSamplerResume(t *testing.T) {
	for name, s := range testSources(t) {
		t.Run(name, func(t *testing.T) {
			const W, M, G = 3, 2, 2
			for r := range W {
				full := &Sampler{Samples: s, Rank: r, World: W, Micro: M, GradAccum: G}
				all := drain(t, full, 1<<30)
				for _, at := range []int{0, 1, 2, 5, len(all) - 1, len(all)} {
					sm := &Sampler{Samples: s, Rank: r, World: W, Micro: M, GradAccum: G, Cursor: Cursor{Consumed: int64(at * M * W)}}
					rest := drain(t, sm, 1<<30)
					if len(rest) != len(all)-at {
						t.Fatalf("rank %d resume at %d: %d micro-batches, want %d", r, at, len(rest), len(all)-at)
					}
					for k := range rest {
						for m := range rest[k] {
							if !slices.Equal(rest[k][m], all[at+k][m]) {
								t.Fatalf("rank %d resume at %d: micro-batch %d differs", r, at, k)
							}
						}
					}
				}
				if full.Cursor.Consumed != int64(len(all)*M*W) {
					t.Fatalf("cursor %d after %d micro-batches", full.Cursor.Consumed, len(all))
				}
			}
			bad := &Sampler{Samples: s, Rank: 0, World: W, Micro: M, Cursor: Cursor{Consumed: 1}}
			if _, err := bad.Next(nil); err == nil {
				t.Fatal("unaligned cursor: no error")
			}
			end := &Sampler{Samples: s, Rank: 0, World: 1, Micro: 1, Cursor: Cursor{Consumed: s.Len()}}
			if _, err := end.Next(nil); err == nil || end.Cursor.Consumed != s.Len() {
				t.Fatalf("past the end: err %v, cursor %d", err, end.Cursor.Consumed)
			}
			for _, sm := range []Sampler{{Rank: 0, World: 1, Micro: 1}, {Samples: s, Rank: 2, World: 2, Micro: 1}, {Samples: s, World: 1}} {
				if _, err := sm.Next(nil); err == nil {
					t.Errorf("%+v: no error", sm)
				}
			}
		})
	}
}

// TestSamplerElastic checks that a run of W=4, M=1 resumed at a step boundary as
// W=2, M=2 (same global batch) sees the same global sample sequence per step.
func TestSamplerElastic(t *testing.T) {
	for name, s := range testSources(t) {
		t.Run(name, func(t *testing.T) {
			const G = 3
			global := func(W, M int, from int64, steps int) [][]int { // the global sequence, gathered from all ranks
				var out [][]int
				ss := make([]*Sampler, W)
				for r := range W {
					ss[r] = &Sampler{Samples: s, Rank: r, World: W, Micro: M, GradAccum: G, Cursor: Cursor{Consumed: from}}
				}
				for range steps * G {
					for _, sm := range ss {
						b, err := sm.Next(nil)
						if err != nil {
							t.Fatal(err)
						}
						out = append(out, b...)
					}
				}
				if !ss[0].AtStep() {
					t.Fatal("not at a step boundary")
				}
				return out
			}
			a := global(4, 1, 0, 8)
			resumeAt := int64(3 * 4 * 1 * G)
			b := global(2, 2, resumeAt, 5)
			for k := range b {
				if !slices.Equal(a[int(resumeAt)+k], b[k]) {
					t.Fatalf("global sample %d differs after the elastic resume", int(resumeAt)+k)
				}
			}
			for k := range a {
				if !slices.Equal(a[k], s.Sample(int64(k), nil)) {
					t.Fatalf("global sample %d is not sample %d", k, k)
				}
			}
		})
	}
}

// TestSamplerReusesBuffers checks that Next reuses dst without corrupting the batch.
func TestSamplerReusesBuffers(t *testing.T) {
	s := testSamples(t)
	sm := &Sampler{Samples: s, Rank: 1, World: 2, Micro: 3}
	var b [][]int
	for g := int64(0); g < 4; g++ {
		var err error
		if b, err = sm.Next(b); err != nil {
			t.Fatal(err)
		}
		for m := range 3 {
			if want := s.Sample(g*6+3+int64(m), nil); !slices.Equal(b[m], want) {
				t.Fatalf("g=%d m=%d differs", g, m)
			}
		}
	}
	if n := testing.AllocsPerRun(20, func() {
		sm.Cursor.Consumed = 0
		b, _ = sm.Next(b)
	}); n > 0 {
		t.Errorf("Next allocates %v times with a reused batch", n)
	}
}

// TestSamplerNextInt32 checks that NextInt32 gives Next's micro-batches, flattened,
// and allocates nothing with a reused buffer.
func TestSamplerNextInt32(t *testing.T) {
	for name, s := range testSources(t) {
		a := &Sampler{Samples: s, Rank: 1, World: 2, Micro: 3, GradAccum: 2}
		b := *a
		var flat []int32
		for g := 0; ; g++ {
			batch, err := a.Next(nil)
			var err2 error
			flat, err2 = b.NextInt32(flat[:0])
			if (err == nil) != (err2 == nil) || a.Cursor != b.Cursor {
				t.Fatalf("%s: micro-batch %d: errors %v / %v, cursors %v / %v", name, g, err, err2, a.Cursor, b.Cursor)
			}
			if err != nil {
				break
			}
			var want []int32
			for _, smp := range batch {
				for _, id := range smp {
					want = append(want, int32(id))
				}
			}
			if !slices.Equal(flat, want) {
				t.Fatalf("%s: micro-batch %d differs", name, g)
			}
		}
		b.Cursor = Cursor{}
		if n := testing.AllocsPerRun(20, func() {
			b.Cursor.Consumed = 0
			flat, _ = b.NextInt32(flat[:0])
		}); n > 0 {
			t.Errorf("%s: NextInt32 allocates %v times", name, n)
		}
	}
}
