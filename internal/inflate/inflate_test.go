package inflate

import (
	"bytes"
	"compress/flate"
	"compress/gzip"
	"errors"
	"hash/crc32"
	"io"
	"math/rand/v2"
	"os"
	"testing"
	"testing/iotest"

	kgzip "github.com/klauspost/compress/gzip"

	"gptkit/internal/tinyshakespeare"
)

// testInputs are data of the kinds a compressor codes differently: text (long and short
// matches), random bytes (stored blocks or literals), runs (offset-1 matches), short
// periods (offsets under 8), and nothing.
func testInputs(t testing.TB) map[string][]byte {
	text, err := tinyshakespeare.Text()
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	random := make([]byte, 300<<10)
	for i := range random {
		random[i] = byte(rng.Uint32())
	}
	var periods []byte
	for p := 1; p < 12; p++ {
		for i := range 5000 {
			periods = append(periods, byte('a'+i%p))
		}
	}
	mixed := append(append(append([]byte{}, text[:200<<10]...), random[:100<<10]...), text[500<<10:]...)
	return map[string][]byte{
		"text": text, "random": random, "runs": bytes.Repeat([]byte{'x'}, 1<<20),
		"periods": periods, "mixed": mixed, "empty": nil, "one byte": {'a'},
	}
}

func gzipped(t testing.TB, data []byte, level int) []byte {
	var buf bytes.Buffer
	w, err := gzip.NewWriterLevel(&buf, level)
	if err != nil {
		t.Fatal(err)
	}
	w.Write(data)
	w.Close()
	return buf.Bytes()
}

func gunzipAll(src io.Reader) ([]byte, error) {
	z, err := NewGzipReader(src)
	if err != nil {
		return nil, err
	}
	return io.ReadAll(z)
}

func TestGzipRoundTrip(t *testing.T) {
	for name, data := range testInputs(t) {
		for _, level := range []int{gzip.HuffmanOnly, gzip.NoCompression, gzip.BestSpeed, 6, gzip.BestCompression} {
			comp := gzipped(t, data, level)
			got, err := gunzipAll(bytes.NewReader(comp))
			if err != nil || !bytes.Equal(got, data) {
				t.Errorf("%s, level %d: %d bytes of %d, %v", name, level, len(got), len(data), err)
			}
			// A source that gives a byte at a time, or half of what is asked.
			for _, r := range []io.Reader{iotest.OneByteReader(bytes.NewReader(comp)), iotest.HalfReader(bytes.NewReader(comp))} {
				if len(comp) > 100<<10 && level != 6 {
					break
				}
				got, err := gunzipAll(r)
				if err != nil || !bytes.Equal(got, data) {
					t.Errorf("%s, level %d, slow source: %d bytes of %d, %v", name, level, len(got), len(data), err)
				}
			}
		}
		// klauspost's encoder makes other choices of blocks and matches.
		var buf bytes.Buffer
		w, _ := kgzip.NewWriterLevel(&buf, 5)
		w.Write(data)
		w.Close()
		got, err := gunzipAll(&buf)
		if err != nil || !bytes.Equal(got, data) {
			t.Errorf("%s, klauspost level 5: %d bytes of %d, %v", name, len(got), len(data), err)
		}
	}
}

// TestSlowPathAlone decodes every input with the per-symbol decoder that otherwise
// takes only a stream's last bytes.
func TestSlowPathAlone(t *testing.T) {
	slowOnly = true
	defer func() { slowOnly = false }()
	for name, data := range testInputs(t) {
		got, err := gunzipAll(bytes.NewReader(gzipped(t, data, 6)))
		if err != nil || !bytes.Equal(got, data) {
			t.Errorf("%s: %d bytes of %d, %v", name, len(got), len(data), err)
		}
	}
}

// TestLongCodes has codes longer than the tables' main index bits, which go through
// subtables: literals of very unequal frequencies (byte k about 2^-k of them) and, in
// the second input, matches nearly all one byte back with a few at far distances.
func TestLongCodes(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	skewed := make([]byte, 1<<20)
	for i := range skewed {
		k := 0
		for k < 40 && rng.IntN(2) == 0 {
			k++
		}
		skewed[i] = byte(k * 6)
	}
	var far []byte
	for len(far) < 1<<20 {
		if rng.IntN(50) == 0 && len(far) > 30000 {
			from := len(far) - 8 - rng.IntN(30000)
			far = append(far, far[from:from+8]...)
			continue
		}
		far = append(far, bytes.Repeat([]byte{byte(rng.IntN(256))}, 5+rng.IntN(30))...)
	}
	for name, data := range map[string][]byte{"skewed literals": skewed, "far matches": far} {
		for _, level := range []int{gzip.HuffmanOnly, 1, 6, 9} {
			got, err := gunzipAll(bytes.NewReader(gzipped(t, data, level)))
			if err != nil || !bytes.Equal(got, data) {
				t.Errorf("%s, level %d: %d bytes of %d, %v", name, level, len(got), len(data), err)
			}
		}
	}
}

func TestGzipMembersAndHeaders(t *testing.T) {
	data := testInputs(t)["text"]
	var buf bytes.Buffer
	parts := [][]byte{data[:1000], data[1000:400000], nil, data[400000:]}
	for i, p := range parts {
		w, _ := gzip.NewWriterLevel(&buf, 6)
		w.Name = "part.txt"
		w.Comment = "a comment"
		w.Extra = []byte{1, 2, 3, 4}
		if i == 1 {
			w.Name = string(bytes.Repeat([]byte{'n'}, 2000)) // longer than compress/gzip reads
		}
		w.Write(p)
		w.Close()
	}
	got, err := gunzipAll(bytes.NewReader(buf.Bytes()))
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("four members: %d bytes of %d, %v", len(got), len(data), err)
	}
	// A header CRC (compress/gzip never writes one): flag bit 1 and the CRC-16.
	comp := gzipped(t, []byte("hello, world\n"), 6)
	withCRC := append([]byte{}, comp[:10]...)
	withCRC[3] |= flagHeaderCRC
	crc := crc16(withCRC)
	withCRC = append(append(withCRC, byte(crc), byte(crc>>8)), comp[10:]...)
	if got, err := gunzipAll(bytes.NewReader(withCRC)); err != nil || string(got) != "hello, world\n" {
		t.Errorf("header CRC: %q, %v", got, err)
	}
	withCRC[10]++
	if _, err := gunzipAll(bytes.NewReader(withCRC)); !errors.Is(err, ErrHeader) {
		t.Errorf("wrong header CRC: %v, want ErrHeader", err)
	}
	// Bytes after the last member that are not another.
	trailing := append(append([]byte{}, comp...), "garbage after it"...)
	if _, err := gunzipAll(bytes.NewReader(trailing)); !errors.Is(err, ErrHeader) {
		t.Errorf("trailing garbage: %v, want ErrHeader", err)
	}
	if _, err := gunzipAll(bytes.NewReader(append(comp, 0x1f))); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("one byte of a next member: %v, want io.ErrUnexpectedEOF", err)
	}
	if _, err := NewGzipReader(bytes.NewReader(nil)); err == nil {
		t.Error("no error for an empty file")
	}
}

// crc16 is a gzip header's CRC-16: the low half of its CRC-32.
func crc16(b []byte) uint16 { return uint16(crc32.ChecksumIEEE(b)) }

// TestTruncatedAndCorrupt cuts a file at every byte and flips bytes in it: the reader
// must fail where compress/gzip fails, give the same data where it does not, and before a
// failure give only data that is there.
func TestTruncatedAndCorrupt(t *testing.T) {
	data := testInputs(t)["text"][:20000]
	for _, level := range []int{gzip.HuffmanOnly, gzip.NoCompression, 6} {
		comp := gzipped(t, data, level)
		for cut := range len(comp) {
			got, err := gunzipAll(bytes.NewReader(comp[:cut]))
			if err == nil {
				t.Fatalf("level %d, cut at %d of %d: no error", level, cut, len(comp))
			}
			if !bytes.HasPrefix(data, got) {
				t.Fatalf("level %d, cut at %d: data not a prefix of the file's", level, cut)
			}
			if cut > 20 && !errors.Is(err, io.ErrUnexpectedEOF) {
				t.Fatalf("level %d, cut at %d: %v, want io.ErrUnexpectedEOF", level, cut, err)
			}
		}
		rng := rand.New(rand.NewPCG(3, uint64(level)))
		for range 3000 {
			bad := append([]byte{}, comp...)
			for range 1 + rng.IntN(3) {
				bad[rng.IntN(len(bad))] ^= byte(1 + rng.IntN(255))
			}
			compareWithStdlib(t, bad)
		}
	}
}

// compareWithStdlib checks the reader against compress/gzip on comp.
func compareWithStdlib(t *testing.T, comp []byte) {
	t.Helper()
	want, werr := stdlibGunzip(comp)
	got, err := gunzipAll(bytes.NewReader(comp))
	if (err == nil) != (werr == nil) {
		if werr == gzip.ErrHeader && longHeaderString(comp) {
			return // compress/gzip reads names and comments of up to 511 bytes
		}
		t.Fatalf("% x:\nours %v, compress/gzip %v", comp[:min(len(comp), 64)], err, werr)
	}
	if err == nil && !bytes.Equal(got, want) {
		t.Fatalf("% x: %d bytes, compress/gzip %d, not the same", comp[:min(len(comp), 64)], len(got), len(want))
	}
}

func stdlibGunzip(comp []byte) ([]byte, error) {
	r, err := gzip.NewReader(bytes.NewReader(comp))
	if err != nil {
		return nil, err
	}
	return io.ReadAll(r)
}

// longHeaderString reports whether some member of comp may have a name or comment of 512
// bytes or more (a rough test, for the one difference from compress/gzip).
func longHeaderString(comp []byte) bool {
	run := 0
	for _, c := range comp {
		if c == 0 {
			run = 0
			continue
		}
		if run++; run >= 511 {
			return true
		}
	}
	return false
}

func TestRawDeflate(t *testing.T) {
	for name, data := range testInputs(t) {
		var buf bytes.Buffer
		w, _ := flate.NewWriter(&buf, 6)
		w.Write(data)
		w.Close()
		buf.WriteString("after the stream")
		got, err := io.ReadAll(NewReader(&buf))
		if err != nil || !bytes.Equal(got, data) {
			t.Errorf("%s: %d bytes of %d, %v", name, len(got), len(data), err)
		}
	}
}

func TestSourceError(t *testing.T) {
	comp := gzipped(t, testInputs(t)["text"], 6)
	boom := errors.New("disk on fire")
	r := io.MultiReader(bytes.NewReader(comp[:len(comp)/2]), iotest.ErrReader(boom))
	got, err := gunzipAll(r)
	if !errors.Is(err, boom) || len(got) == 0 {
		t.Errorf("%d bytes, %v; want some data, then the source's error", len(got), err)
	}
}

// liar says it read more bytes than the buffer it was given holds.
type liar struct{ r io.Reader }

func (l liar) Read(p []byte) (int, error) {
	n, err := l.r.Read(p)
	return n + 20000, err
}

func TestSourceReadCountChecked(t *testing.T) {
	comp := gzipped(t, testInputs(t)["text"], 6)
	if _, err := gunzipAll(liar{bytes.NewReader(comp)}); err == nil {
		t.Error("no error from a source whose Read returns more than it was given")
	}
}

func TestWriteTo(t *testing.T) {
	data := testInputs(t)["mixed"]
	z, err := NewGzipReader(bytes.NewReader(gzipped(t, data, 6)))
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if n, err := z.WriteTo(&out); err != nil || n != int64(len(data)) || !bytes.Equal(out.Bytes(), data) {
		t.Errorf("WriteTo: %d bytes, %v", n, err)
	}
	z.Close()
	if n, err := z.Read(make([]byte, 10)); n != 0 || err == nil {
		t.Errorf("Read after Close: %d bytes, %v", n, err)
	}
}

// FuzzMatchesStdlib: on any input, the reader fails where compress/gzip fails and gives
// the same data where it does not.
func FuzzMatchesStdlib(f *testing.F) {
	text := []byte("To be, or not to be, that is the question: whether 'tis nobler in the mind to suffer")
	for _, level := range []int{gzip.HuffmanOnly, gzip.NoCompression, 1, 9} {
		var buf bytes.Buffer
		w, _ := gzip.NewWriterLevel(&buf, level)
		w.Write(bytes.Repeat(text, 3))
		w.Close()
		f.Add(buf.Bytes())
	}
	f.Add([]byte{0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff, 3, 0, 0, 0, 0, 0, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, comp []byte) {
		compareWithStdlib(t, comp)
	})
}

// FuzzDeflateMatchesStdlib: the same for raw DEFLATE streams against compress/flate.
func FuzzDeflateMatchesStdlib(f *testing.F) {
	for _, level := range []int{flate.HuffmanOnly, flate.NoCompression, 1, 9} {
		var buf bytes.Buffer
		w, _ := flate.NewWriter(&buf, level)
		w.Write([]byte("abcabcabcabcabcabc, the quick brown fox jumps over the lazy dog, abcabcabc"))
		w.Close()
		f.Add(buf.Bytes())
	}
	f.Fuzz(func(t *testing.T, comp []byte) {
		want, werr := io.ReadAll(flate.NewReader(bytes.NewReader(comp)))
		got, err := io.ReadAll(NewReader(bytes.NewReader(comp)))
		if (err == nil) != (werr == nil) {
			t.Fatalf("% x:\nours %v, compress/flate %v", comp[:min(len(comp), 64)], err, werr)
		}
		if err == nil && !bytes.Equal(got, want) {
			t.Fatalf("% x: %d bytes, compress/flate %d, not the same", comp[:min(len(comp), 64)], len(got), len(want))
		}
	})
}

// BenchmarkGunzip decodes 64 MB of $BENCH_CORPUS (default: tiny Shakespeare), gzipped by
// klauspost/compress at level 6 as BenchmarkDecompress in prep does, with this package,
// klauspost/compress/gzip and compress/gzip: MB/s of decompressed data.
//
//	BENCH_CORPUS=.cache/bench/mixed.txt go test ./internal/inflate -run '^$' -bench Gunzip
func BenchmarkGunzip(b *testing.B) {
	src := testInputs(b)["text"]
	if name := os.Getenv("BENCH_CORPUS"); name != "" {
		var err error
		if src, err = os.ReadFile(name); err != nil {
			b.Fatal(err)
		}
	}
	data := bytes.Repeat(src, (64<<20)/len(src)+1)[:64<<20]
	var gz bytes.Buffer
	w, _ := kgzip.NewWriterLevel(&gz, 6)
	w.Write(data)
	w.Close()
	for _, v := range []struct {
		name string
		open func(io.Reader) (io.Reader, error)
	}{
		{"inflate", func(r io.Reader) (io.Reader, error) { return NewGzipReader(r) }},
		{"klauspost", func(r io.Reader) (io.Reader, error) { return kgzip.NewReader(r) }},
		{"stdlib", func(r io.Reader) (io.Reader, error) { return gzip.NewReader(r) }},
	} {
		b.Run(v.name, func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			buf := make([]byte, 256<<10)
			for b.Loop() {
				r, err := v.open(bytes.NewReader(gz.Bytes()))
				if err != nil {
					b.Fatal(err)
				}
				n, err := io.CopyBuffer(struct{ io.Writer }{io.Discard}, struct{ io.Reader }{r}, buf)
				if err != nil || n != int64(len(data)) {
					b.Fatalf("%d bytes, %v", n, err)
				}
			}
		})
	}
}

// TestAsmMatchesGo decodes streams, whole and with bytes broken, with the assembly loop
// (where the machine has one) and with huffmanFast's Go loop alone: the same data, and
// the same error at the same place. (On other machines, and with -tags noasm, both are
// the Go loop.)
func TestAsmMatchesGo(t *testing.T) {
	if !asmLoop() {
		t.Log("no assembly loop here (not amd64 with BMI2, or -tags noasm): the Go loop is compared with itself")
	}
	decode := func(comp []byte, goLoop bool) ([]byte, string) {
		goOnly = goLoop
		defer func() { goOnly = false }()
		got, err := gunzipAll(bytes.NewReader(comp))
		if err != nil {
			return got, err.Error()
		}
		return got, ""
	}
	rng := rand.New(rand.NewPCG(7, 8))
	inputs := testInputs(t)
	for name, data := range inputs {
		for _, level := range []int{gzip.HuffmanOnly, 1, 6, 9} {
			comp := gzipped(t, data, level)
			variants := [][]byte{comp}
			for range 20 {
				if len(comp) < 64 {
					break
				}
				broken := bytes.Clone(comp)
				broken[20+rng.IntN(len(comp)-28)] ^= byte(1 + rng.IntN(255))
				variants = append(variants, broken)
			}
			for i, v := range variants {
				asmOut, asmErr := decode(v, false)
				goOut, goErr := decode(v, true)
				if asmErr != goErr || !bytes.Equal(asmOut, goOut) {
					t.Errorf("%s, level %d, variant %d: assembly %d bytes, %q; Go %d bytes, %q",
						name, level, i, len(asmOut), asmErr, len(goOut), goErr)
				}
				if i == 0 && (asmErr != "" || !bytes.Equal(asmOut, data)) {
					t.Errorf("%s, level %d: %d bytes of %d, %q", name, level, len(asmOut), len(data), asmErr)
				}
			}
		}
	}
}
