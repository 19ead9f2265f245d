package shards

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"gptkit/storage"
)

// Verify on open (VerifyOnOpen): the loader checks every shard it maps before the first
// step, as `shards verify` does: the .idx's and .bin's sha256 against the manifest, and
// every token id against the vocabulary. Hashing reads the whole .bin (about the speed of
// sha256, see BenchmarkVerifyOnOpen), so a file found good is remembered in
// CACHE/verified/, under its path and storage.FileIdentity (device, inode, size,
// modification and change times): the next open of the same file costs a stat and a
// small read. Rewriting a file in place, or replacing it, changes its identity, and it is
// checked again. (A byte flipped on the disk behind the file system's back, bit rot,
// keeps the identity; `shards verify` reads everything, always.)

// verifiedName is the cache's directory under the cache directory.
const verifiedName = "verified"

// verifiedEntry is what the cache remembers of one .bin.
type verifiedEntry struct {
	Path     string  `json:"path"`
	Identity string  `json:"identity"` // storage.FileIdentity when it was checked
	DType    DType   `json:"dtype"`
	SHA256   string  `json:"sha256"`
	IDs      idRange `json:"ids"`
}

// verifiedCache is CACHE/verified.
type verifiedCache struct{ dir string }

func newVerifiedCache(cacheDir string) verifiedCache {
	if cacheDir == "" {
		cacheDir = storage.DefaultCacheDir()
	}
	return verifiedCache{dir: filepath.Join(cacheDir, verifiedName)}
}

// entryPath is the entry file of the local file path (absolute).
func (c verifiedCache) entryPath(path string) string {
	sum := sha256.Sum256([]byte(path))
	return filepath.Join(c.dir, hex.EncodeToString(sum[:16])+".json")
}

// lookup returns the entry for path if the file still has identity id.
func (c verifiedCache) lookup(path, id string, dtype DType) (verifiedEntry, bool) {
	data, err := os.ReadFile(c.entryPath(path))
	if err != nil {
		return verifiedEntry{}, false
	}
	var e verifiedEntry
	if json.Unmarshal(data, &e) != nil || e.Path != path || e.Identity != id || e.DType != dtype {
		return verifiedEntry{}, false
	}
	return e, true
}

// store records e (atomically; a failure only costs a later re-check).
func (c verifiedCache) store(e verifiedEntry) {
	data, err := json.Marshal(e)
	if err != nil || os.MkdirAll(c.dir, 0o777) != nil {
		return
	}
	p := c.entryPath(e.Path)
	tmp, err := os.CreateTemp(c.dir, ".entry-*")
	if err != nil {
		return
	}
	_, werr := tmp.Write(data)
	if cerr := tmp.Close(); werr != nil || cerr != nil || os.Rename(tmp.Name(), p) != nil {
		os.Remove(tmp.Name())
	}
}

// verifyData checks an open shard r (from binPath) against its manifest entry want (nil:
// no checksums to compare) and vocab (0: no id check); what names the vocabulary's
// source for messages and m (nil for a bare shard) picks the hint (vocabHint). A .bin found good is remembered; one being checked by another
// process is waited for rather than hashed twice.
func (r *Reader) verifyData(ctx context.Context, binPath string, want *ShardInfo, vocab int, what string, m *Manifest, cache verifiedCache) error {
	if want != nil {
		if got := sha256Hex(r.idxMap); got != want.IdxSHA256 {
			return checksumErr(r.name+".idx", got, want.IdxSHA256)
		}
	}
	abs, err := filepath.Abs(binPath)
	if err != nil {
		return err
	}
	ids, err := r.binIDs(ctx, abs, want, cache)
	if err != nil {
		return err
	}
	if vocab > 0 && !ids.within(vocab) {
		return vocabError(r.name+".bin", r.bin, r.ix, vocab, what, m)
	}
	return nil
}

// binIDs returns the id range of the mapped .bin at abs, from the cache or by hashing
// and scanning it (then checking the sha256 against want's).
func (r *Reader) binIDs(ctx context.Context, abs string, want *ShardInfo, cache verifiedCache) (idRange, error) {
	identity := func() string {
		fi, err := os.Stat(abs)
		if err != nil {
			return ""
		}
		return storage.FileIdentity(fi)
	}
	good := func(e verifiedEntry) bool { return want == nil || e.SHA256 == want.BinSHA256 }
	id := identity()
	if e, ok := cache.lookup(abs, id, r.ix.dtype); ok && good(e) {
		return e.IDs, nil
	}
	if os.MkdirAll(cache.dir, 0o777) == nil {
		if unlock, err := storage.LockFile(cache.entryPath(abs) + ".lock"); err == nil {
			defer unlock()
			if e, ok := cache.lookup(abs, id, r.ix.dtype); ok && good(e) {
				return e.IDs, nil // another process checked it meanwhile
			}
		}
	}
	s, err := scanFile(ctx, abs, r.ix.dtype)
	if err != nil {
		return idRange{}, err
	}
	sum := s.sum()
	if want != nil && sum != want.BinSHA256 {
		return idRange{}, checksumErr(r.name+".bin", sum, want.BinSHA256)
	}
	if id != "" && identity() == id {
		cache.store(verifiedEntry{Path: abs, Identity: id, DType: r.ix.dtype, SHA256: sum, IDs: s.ids})
	}
	return s.ids, nil
}

// vocabWhat names the vocabulary a dataset's ids are checked against.
func vocabWhat(m *Manifest, vocab int) string {
	if m != nil && m.Tokenizer.VocabSize == vocab {
		return fmt.Sprintf("the manifest's tokenizer %s", m.Tokenizer.Name)
	}
	return "the model (vocab_size)"
}
