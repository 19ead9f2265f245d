// Command nfc generates tokenize/nfc_tables.go, the data behind tokenize.NFC.
//
// It reads the Unicode Character Database files of Debian's unicode-data package
// (UnicodeData.txt, DerivedAge.txt, DerivedNormalizationProps.txt and
// CompositionExclusions.txt) and keeps only code points whose Age is at most 9.0,
// which is what Hugging Face tokenizers' NFC normalizer uses. Newer code points get
// no table entry: they behave as starters (ccc 0) that never decompose or compose.
//
// Usage, from the tokenize directory (this is what go generate runs):
//
//	go run ./internal/gen/nfc [-data /usr/share/unicode] [-o nfc_tables.go]
//
// The output is deterministic and gofmt-clean.
package main

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"go/format"
	"log"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

const (
	maxRune = 0x10FFFF
	maxAge  = 90 // Unicode 9.0, as major*10+minor

	// Hangul jamo that combine algorithmically (UAX #15 / Unicode 3.12).
	vBase, vCount = 0x1161, 21
	tBase, tCount = 0x11A7, 28

	// Bits of the per-code-point info byte (must match nfc.go).
	rankMask  = 0x3F
	maybeFlag = 0x40 // NFC_Quick_Check=Maybe: may compose with the preceding character
	noFlag    = 0x80 // NFC_Quick_Check=No: never appears in NFC
)

func main() {
	log.SetFlags(0)
	log.SetPrefix("gen/nfc: ")
	dataDir := flag.String("data", "/usr/share/unicode", "directory holding the Unicode Character Database files")
	out := flag.String("o", "nfc_tables.go", "output file")
	flag.Parse()

	src, err := generate(*dataDir)
	if err != nil {
		log.Fatal(err)
	}
	if err := os.WriteFile(*out, src, 0o644); err != nil {
		log.Fatal(err)
	}
}

// field is one semicolon-separated UCD line: the code point range and the other fields.
type field struct {
	lo, hi rune
	rest   []string
}

// readUCD parses a UCD text file: comments stripped, fields trimmed, the first field a
// code point or a lo..hi range.
func readUCD(path string) ([]field, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var fields []field
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line, _, _ := strings.Cut(sc.Text(), "#")
		if strings.TrimSpace(line) == "" {
			continue
		}
		parts := strings.Split(line, ";")
		for i := range parts {
			parts[i] = strings.TrimSpace(parts[i])
		}
		loS, hiS, isRange := strings.Cut(parts[0], "..")
		lo, err := parseHex(loS)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %v", path, n, err)
		}
		hi := lo
		if isRange {
			if hi, err = parseHex(hiS); err != nil {
				return nil, fmt.Errorf("%s:%d: %v", path, n, err)
			}
		}
		fields = append(fields, field{lo, hi, parts[1:]})
	}
	return fields, sc.Err()
}

func parseHex(s string) (rune, error) {
	v, err := strconv.ParseUint(s, 16, 32)
	if err != nil || v > maxRune {
		return 0, fmt.Errorf("bad code point %q", s)
	}
	return rune(v), nil
}

// parseAge turns "9.0" into 90.
func parseAge(s string) (int, error) {
	maj, min, ok := strings.Cut(s, ".")
	a, err1 := strconv.Atoi(maj)
	b, err2 := strconv.Atoi(min)
	if !ok || err1 != nil || err2 != nil || b > 9 {
		return 0, fmt.Errorf("bad age %q", s)
	}
	return a*10 + b, nil
}

func generate(dir string) ([]byte, error) {
	// Age: keep = assigned in Unicode 9.0 or earlier.
	ages, err := readUCD(filepath.Join(dir, "DerivedAge.txt"))
	if err != nil {
		return nil, err
	}
	version, err := ucdVersion(filepath.Join(dir, "DerivedAge.txt"))
	if err != nil {
		return nil, err
	}
	keep := make([]bool, maxRune+1)
	for _, f := range ages {
		a, err := parseAge(f.rest[0])
		if err != nil {
			return nil, err
		}
		for r := f.lo; r <= f.hi; r++ {
			keep[r] = a <= maxAge
		}
	}

	// ccc and canonical decomposition mappings.
	ucd, err := readUCD(filepath.Join(dir, "UnicodeData.txt"))
	if err != nil {
		return nil, err
	}
	ccc := make([]uint8, maxRune+1)
	decomp := map[rune][]rune{}
	for _, f := range ucd {
		r := f.lo
		if !keep[r] || len(f.rest) < 5 {
			continue
		}
		c, err := strconv.ParseUint(f.rest[2], 10, 8)
		if err != nil {
			return nil, fmt.Errorf("UnicodeData.txt: %04X: bad ccc %q", r, f.rest[2])
		}
		ccc[r] = uint8(c)
		d := f.rest[4]
		if d == "" || strings.HasPrefix(d, "<") {
			continue // none, or a compatibility mapping
		}
		for _, h := range strings.Fields(d) {
			p, err := parseHex(h)
			if err != nil {
				return nil, fmt.Errorf("UnicodeData.txt: %04X: %v", r, err)
			}
			if !keep[p] {
				return nil, fmt.Errorf("%04X (Age <= 9.0) decomposes to newer %04X", r, p)
			}
			decomp[r] = append(decomp[r], p)
		}
	}

	// Full_Composition_Exclusion and NFC_Quick_Check, as published.
	props, err := readUCD(filepath.Join(dir, "DerivedNormalizationProps.txt"))
	if err != nil {
		return nil, err
	}
	fce := map[rune]bool{}
	wantQC := map[rune]string{}
	for _, f := range props {
		for r := f.lo; r <= f.hi; r++ {
			if !keep[r] {
				continue
			}
			switch f.rest[0] {
			case "Full_Composition_Exclusion":
				fce[r] = true
			case "NFC_QC":
				wantQC[r] = f.rest[1]
			}
		}
	}

	// Cross-check Full_Composition_Exclusion against its definition: the
	// CompositionExclusions.txt list, singletons and non-starter decompositions.
	excl, err := readUCD(filepath.Join(dir, "CompositionExclusions.txt"))
	if err != nil {
		return nil, err
	}
	derived := map[rune]bool{}
	for _, f := range excl {
		for r := f.lo; r <= f.hi; r++ {
			if keep[r] {
				derived[r] = true
			}
		}
	}
	for r, d := range decomp {
		if len(d) == 1 || ccc[r] != 0 || ccc[d[0]] != 0 {
			derived[r] = true
		}
	}
	if err := sameSet("Full_Composition_Exclusion", fce, derived); err != nil {
		return nil, err
	}

	// Composition pairs, and the characters that may compose with what precedes them.
	type pair struct{ a, b, c rune }
	var pairs []pair
	maybe := map[rune]bool{}
	for r, d := range decomp {
		if len(d) == 2 && !fce[r] {
			pairs = append(pairs, pair{d[0], d[1], r})
			maybe[d[1]] = true
		}
	}
	slices.SortFunc(pairs, func(x, y pair) int {
		return cmpKey(x.a, x.b, y.a, y.b)
	})
	for r := rune(vBase); r < vBase+vCount; r++ {
		maybe[r] = true
	}
	for r := rune(tBase + 1); r < tBase+tCount; r++ {
		maybe[r] = true
	}

	// Check NFC_Quick_Check: No = Full_Composition_Exclusion, Maybe = second
	// element of a primary composite (or a Hangul V/T jamo).
	gotQC := map[rune]string{}
	for r := range fce {
		gotQC[r] = "N"
	}
	for r := range maybe {
		if gotQC[r] != "" {
			return nil, fmt.Errorf("%04X is both NFC_QC=No and Maybe", r)
		}
		gotQC[r] = "M"
	}
	for r, v := range wantQC {
		if gotQC[r] != v {
			return nil, fmt.Errorf("NFC_QC of %04X: derived %q, file says %q", r, gotQC[r], v)
		}
	}
	if len(gotQC) != len(wantQC) {
		return nil, fmt.Errorf("NFC_QC: derived %d code points, file lists %d", len(gotQC), len(wantQC))
	}

	// Full (recursive) canonical decompositions.
	var full func(r rune) []rune
	full = func(r rune) []rune {
		d, ok := decomp[r]
		if !ok {
			return []rune{r}
		}
		var out []rune
		for _, p := range d {
			out = append(out, full(p)...)
		}
		return out
	}

	// ccc ranks: the distinct ccc values in increasing order, so comparisons on
	// ranks equal comparisons on ccc.
	var cccs []int
	seen := map[uint8]bool{0: true}
	cccs = append(cccs, 0)
	for r := range ccc {
		if !seen[ccc[r]] {
			seen[ccc[r]] = true
			cccs = append(cccs, int(ccc[r]))
		}
	}
	slices.Sort(cccs)
	if len(cccs) > rankMask+1 {
		return nil, fmt.Errorf("%d distinct ccc values do not fit in the info byte", len(cccs))
	}
	rank := map[uint8]uint8{}
	for i, c := range cccs {
		rank[uint8(c)] = uint8(i)
	}

	info := make([]uint8, maxRune+1)
	limit := rune(0) // info is 0 from limit on
	for r := range info {
		v := rank[ccc[r]]
		switch gotQC[rune(r)] {
		case "M":
			v |= maybeFlag
		case "N":
			v |= noFlag
		}
		info[r] = v
		if v != 0 {
			limit = rune(r) + 1
		}
	}

	// A character with info 0 (ccc 0, NFC_QC=Yes) must be a normalization boundary:
	// its decomposition starts with a starter that nothing composes with.
	for r, d := range decomp {
		f := full(r)
		if info[r] == 0 && (ccc[f[0]] != 0 || maybe[f[0]]) {
			return nil, fmt.Errorf("%04X has info 0 but its decomposition %X starts with a combining character", r, d)
		}
	}

	// Two-stage table over [0, limit): pick the block size giving the fewest bytes.
	var best *trie
	for shift := 4; shift <= 9; shift++ {
		t := buildTrie(info[:limit], shift)
		if best == nil || t.size() < best.size() {
			best = t
		}
	}

	// Decomposition table, sorted by code point.
	keys := make([]rune, 0, len(decomp))
	for r := range decomp {
		keys = append(keys, r)
	}
	slices.Sort(keys)

	var b bytes.Buffer
	b.WriteString("// Code generated by \"go run ./internal/gen/nfc\"; DO NOT EDIT.\n\n")
	fmt.Fprintf(&b, "// Source: Unicode %s data (Debian unicode-data), restricted to code points\n", version)
	b.WriteString("// with Age <= 9.0. Regenerate with: go generate (in this directory).\n\n")
	b.WriteString("package tokenize\n\n")
	fmt.Fprintf(&b, "// nfcUCDVersion is the version of the Unicode Character Database the tables were built from.\n")
	fmt.Fprintf(&b, "const nfcUCDVersion = %q\n\n", version)

	b.WriteString("// nfcCCC maps the ccc rank stored in an info byte (info&nfcRankMask) to the canonical combining class.\n")
	writeInts(&b, "nfcCCC", "uint8", cccs, 16, false)

	fmt.Fprintf(&b, "// Info bytes (ccc rank | nfcMaybe | nfcNo) of code points below nfcInfoLimit,\n")
	fmt.Fprintf(&b, "// as a two-stage table with blocks of %d; code points from nfcInfoLimit on have info 0.\n", 1<<best.shift)
	b.WriteString("const (\n")
	fmt.Fprintf(&b, "\tnfcInfoLimit = %#x\n", limit)
	fmt.Fprintf(&b, "\tnfcBlockShift = %d\n", best.shift)
	b.WriteString(")\n\n")
	b.WriteString("// nfcIndex maps r>>nfcBlockShift to the first entry of its block in nfcBlocks, divided by the block size.\n")
	writeInts(&b, "nfcIndex", best.indexType(), best.index, 16, false)
	b.WriteString("// nfcBlocks holds the info bytes of the distinct blocks.\n")
	writeInts(&b, "nfcBlocks", "uint8", best.blocks, 32, false)

	b.WriteString("// nfcDecompKeys lists, sorted, the code points with a canonical decomposition\n")
	b.WriteString("// (Hangul syllables excepted); the full decomposition of nfcDecompKeys[i] is\n")
	b.WriteString("// nfcDecompRunes[nfcDecompOff[i]:nfcDecompOff[i+1]].\n")
	var runes, offs []int
	var keyInts []int
	for _, r := range keys {
		keyInts = append(keyInts, int(r))
		offs = append(offs, len(runes))
		for _, p := range full(r) {
			runes = append(runes, int(p))
		}
	}
	offs = append(offs, len(runes))
	writeInts(&b, "nfcDecompKeys", "uint32", keyInts, 10, true)
	writeInts(&b, "nfcDecompOff", "uint16", offs, 12, false)
	writeInts(&b, "nfcDecompRunes", "uint32", runes, 10, true)

	b.WriteString("// nfcCompKeys lists, sorted, the pairs a<<21|b that compose canonically (Hangul\n")
	b.WriteString("// excepted); nfcCompRunes[i] is the composite of nfcCompKeys[i].\n")
	var ck, cv []int
	for _, p := range pairs {
		ck = append(ck, int(p.a)<<21|int(p.b))
		cv = append(cv, int(p.c))
	}
	writeInts(&b, "nfcCompKeys", "uint64", ck, 6, true)
	writeInts(&b, "nfcCompRunes", "uint32", cv, 10, true)

	src, err := format.Source(b.Bytes())
	if err != nil {
		return nil, fmt.Errorf("formatting output: %v", err)
	}
	nonzero := 0
	for _, v := range info {
		if v != 0 {
			nonzero++
		}
	}
	log.Printf("%d code points with info, limit %#x, block %d: %d blocks, %d bytes; %d decompositions (%d runes); %d composition pairs; %d ccc values",
		nonzero, limit, 1<<best.shift, len(best.blocks)>>best.shift, best.size(), len(keys), len(runes), len(pairs), len(cccs))
	return src, nil
}

func cmpKey(a1, b1, a2, b2 rune) int {
	if a1 != a2 {
		return int(a1 - a2)
	}
	return int(b1 - b2)
}

// ucdVersion reads the version from the first line of a derived file, e.g.
// "# DerivedAge-15.0.0.txt".
func ucdVersion(path string) (string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	first, _, _ := strings.Cut(string(data), "\n")
	_, v, ok := strings.Cut(first, "-")
	v, ok2 := strings.CutSuffix(strings.TrimSpace(v), ".txt")
	if !ok || !ok2 {
		return "", fmt.Errorf("%s: no version in first line %q", path, first)
	}
	return v, nil
}

func sameSet(name string, want, got map[rune]bool) error {
	for r := range want {
		if !got[r] {
			return fmt.Errorf("%s: %04X listed but not derived", name, r)
		}
	}
	for r := range got {
		if !want[r] {
			return fmt.Errorf("%s: %04X derived but not listed", name, r)
		}
	}
	return nil
}

// trie is a two-stage table: index[r>>shift] is a block number, blocks holds the
// distinct blocks of 1<<shift values.
type trie struct {
	shift  int
	index  []int
	blocks []int
}

func buildTrie(vals []uint8, shift int) *trie {
	n := 1 << shift
	t := &trie{shift: shift}
	ids := map[string]int{}
	for lo := 0; lo < len(vals); lo += n {
		blk := make([]uint8, n)
		copy(blk, vals[lo:min(lo+n, len(vals))])
		id, ok := ids[string(blk)]
		if !ok {
			id = len(ids)
			ids[string(blk)] = id
			for _, v := range blk {
				t.blocks = append(t.blocks, int(v))
			}
		}
		t.index = append(t.index, id)
	}
	return t
}

func (t *trie) indexType() string {
	if len(t.blocks)>>t.shift <= 256 {
		return "uint8"
	}
	return "uint16"
}

func (t *trie) size() int {
	w := 1
	if t.indexType() == "uint16" {
		w = 2
	}
	return len(t.index)*w + len(t.blocks)
}

// writeInts writes a fixed-size array variable, perLine values per line.
func writeInts(b *bytes.Buffer, name, typ string, vals []int, perLine int, hex bool) {
	fmt.Fprintf(b, "var %s = [%d]%s{", name, len(vals), typ)
	for i, v := range vals {
		if i%perLine == 0 {
			b.WriteString("\n")
		} else {
			b.WriteString(" ")
		}
		if hex {
			fmt.Fprintf(b, "%#x,", v)
		} else {
			fmt.Fprintf(b, "%d,", v)
		}
	}
	b.WriteString("\n}\n\n")
}
