package prep

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"gptkit/internal/fetch"
)

// PlanOptions change where a corpus is downloaded from and how it is checked.
type PlanOptions struct {
	// Mirror is a base URL (--mirror BASE) serving the catalog's relative names:
	// BASE/train/00.jsonl.zst, BASE/input.txt, ... It is tried before the
	// catalog's sources.
	Mirror string
	// MirrorSums is the mirror's BASE/SHA256SUMS, as FetchMirrorSums returns it.
	MirrorSums map[string]string
	// Checksums is the user's --checksums FILE, parsed with fetch.ParseSHA256SUMS.
	Checksums map[string]string
}

// Plan maps each of the corpus's files to a fetch.File: Dest is
// dir/downloads/<Name>; URLs are the mirror's (opt.Mirror + "/" + Name) when a
// mirror is given, then the catalog's sources in order; SHA256 comes from
// opt.Checksums, else opt.MirrorSums, else the catalog. The catalog's Size is kept
// only while the sha256 used is the catalog's (or the catalog has none): a sha256
// from elsewhere may well describe another version of the file. Pass CheckDownload
// as fetch.Options.Validate and FetchHint as fetch.Options.Hint.
func (c Corpus) Plan(dir string, opt PlanOptions) []fetch.File {
	base := strings.TrimRight(opt.Mirror, "/")
	files := make([]fetch.File, 0, len(c.Files))
	for _, cf := range c.Files {
		f := fetch.File{Dest: filepath.Join(dir, "downloads", filepath.FromSlash(cf.Name)), Size: cf.Size, SHA256: cf.SHA256}
		if base != "" {
			f.URLs = append(f.URLs, base+"/"+cf.Name)
		}
		for _, s := range cf.Sources {
			if !slices.Contains(f.URLs, s.URL) {
				f.URLs = append(f.URLs, s.URL)
			}
		}
		for _, sums := range []map[string]string{opt.Checksums, opt.MirrorSums} {
			if sum, ok := c.checksumOf(sums, cf.Name); ok {
				f.SHA256 = strings.ToLower(sum)
				break
			}
		}
		if cf.SHA256 != "" && f.SHA256 != cf.SHA256 {
			f.Size = 0
		}
		files = append(files, f)
	}
	return files
}

// checksumOf finds the sha256 of the corpus file name in sums: by its catalog name
// ("train/00.jsonl.zst"), else by its base name where no other file of the corpus has
// it (a list written by sha256sum in the directory the files were in).
func (c Corpus) checksumOf(sums map[string]string, name string) (string, bool) {
	if sum, ok := sums[name]; ok {
		return sum, true
	}
	base := path.Base(name)
	for _, other := range c.Files {
		if other.Name != name && path.Base(other.Name) == base {
			return "", false
		}
	}
	sum, ok := sums[base]
	return sum, ok
}

// ChecksumsMatched counts the corpus's files that sums has a sha256 for (checksumOf):
// a --checksums FILE that names none of them would check nothing.
func (c Corpus) ChecksumsMatched(sums map[string]string) int {
	n := 0
	for _, cf := range c.Files {
		if _, ok := c.checksumOf(sums, cf.Name); ok {
			n++
		}
	}
	return n
}

// maxSumsBytes bounds a mirror's SHA256SUMS: a few hundred files need a few dozen KB.
const maxSumsBytes = 16 << 20

// FetchMirrorSums downloads and parses base/SHA256SUMS (sha256sum format). A mirror
// without one (404, 410, or the 403 S3 answers for a missing object) gives nil, nil.
// A nil client means fetch.DefaultClient().
func FetchMirrorSums(ctx context.Context, client *http.Client, base string) (map[string]string, error) {
	url := strings.TrimRight(base, "/") + "/SHA256SUMS"
	data, err := fetch.Get(ctx, client, url, maxSumsBytes)
	if errors.Is(err, fetch.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("prep: mirror checksums: %w (retry, or pass --checksums FILE)", err)
	}
	sums, err := fetch.ParseSHA256SUMS(data)
	if err != nil {
		return nil, fmt.Errorf("prep: %s: %w (fix the mirror's SHA256SUMS, or pass --checksums FILE)", url, err)
	}
	return sums, nil
}

// magics are the leading bytes of the compressed formats the catalog downloads.
var magics = []struct{ suffix, name, magic string }{
	{".zst", "zstd", "\x28\xB5\x2F\xFD"},
	{".zip", "zip", "PK"},
	{".gz", "gzip", "\x1F\x8B"},
	{".parquet", "Parquet", "PAR1"},
}

// CheckDownload is a fetch.Options.Validate for corpus files: it rejects an empty
// file or an HTML page, and a .zst, .zip, .gz or .parquet file that does not start
// with its format's magic bytes (for .zst, or a skippable frame's, as pzstd writes).
func CheckDownload(dest string, head []byte) error {
	if err := fetch.RejectEmptyOrHTML(dest, head); err != nil {
		return err
	}
	for _, m := range magics {
		if m.suffix == ".zst" && strings.HasSuffix(dest, m.suffix) && sniff(head[:min(len(head), 4)]) == zstded {
			continue // (a skippable frame first is zstd too: pzstd's files start so)
		}
		if strings.HasSuffix(dest, m.suffix) && !bytes.HasPrefix(head, []byte(m.magic)) {
			return fmt.Errorf("the file does not start like %s data (first bytes %q)", m.name, head[:min(len(head), 8)])
		}
	}
	return nil
}

// FetchHint is a fetch.Options.Hint naming prep's flags.
func FetchHint(f fetch.File, err error) string {
	if errors.Is(err, fetch.ErrMismatch) {
		return fmt.Sprintf("if that version is the one you want, list its sha256 in a --checksums FILE; else pass --mirror BASE with the right copy, or put it at %s by hand", f.Dest)
	}
	return fmt.Sprintf("rerun to resume, pass --mirror BASE (a copy serving the names `prep list` shows), or download the file by hand to %s", f.Dest)
}
