package spec

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"

	"gptkit/tokenize"
)

// Remote SPECs: a tokenizer that is neither a path nor a built-in name is downloaded
// once into the cache, from
//
//   - an http(s) URL of one file (a tokenizer.json, a .tiktoken file named after its
//     encoding, a chars.json): CacheDir/url/<16 hex digits of the URL's sha256>/<file>;
//   - a Hugging Face model id ORG/NAME: $HF_ENDPOINT (default https://huggingface.co)
//     /ORG/NAME/resolve/main/tokenizer.json, as AutoTokenizer.from_pretrained fetches it:
//     CacheDir/hf/ORG/NAME/tokenizer.json.
//
// Nobody publishes their digests, so the file is checked against Options.SHA256 when it
// is given (--tokenizer-sha256) and otherwise only for being a tokenizer, with a warning
// on Options.Logger saying so and printing the sha256 to pin.

// hfRepoID matches a Hugging Face repository id, ORG/NAME.
var hfRepoID = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]*/[A-Za-z0-9][A-Za-z0-9_.-]*$`)

// DefaultHFEndpoint is where Hugging Face ids are fetched from unless $HF_ENDPOINT says
// otherwise (as for the huggingface_hub library).
const DefaultHFEndpoint = "https://huggingface.co"

// remoteSource returns the URL and cache-relative path of a remote SPEC; ok is false
// when spec is not one.
func remoteSource(spec string) (src, rel string, ok bool) {
	if strings.HasPrefix(spec, "http://") || strings.HasPrefix(spec, "https://") {
		u, err := url.Parse(spec)
		if err != nil || u.Host == "" {
			return "", "", false
		}
		base := path.Base(u.Path)
		if base == "." || base == "/" || base == "" {
			base = hfFile
		}
		sum := sha256.Sum256([]byte(spec))
		return spec, filepath.Join("url", hex.EncodeToString(sum[:8]), base), true
	}
	if hfRepoID.MatchString(spec) && !strings.Contains(spec, "..") {
		endpoint := strings.TrimRight(os.Getenv("HF_ENDPOINT"), "/")
		if endpoint == "" {
			endpoint = DefaultHFEndpoint
		}
		return endpoint + "/" + spec + "/resolve/main/" + hfFile, filepath.Join("hf", filepath.FromSlash(spec), hfFile), true
	}
	return "", "", false
}

// missingLocalPath returns an error when spec, of the form of a Hugging Face id ORG/NAME
// but not there on disk, reads as a path to a local tokenizer that is missing rather than
// as an id: NAME ends as a tokenizer file does (.json, .tiktoken, .txt: a typo in
// data/tokenizer.json, or one run from another directory). Such a SPEC was taken for an
// id and downloaded from Hugging Face, and failed, offline, saying to retry later,
// naming no local path.
func missingLocalPath(spec string) error {
	if strings.HasPrefix(spec, "http://") || strings.HasPrefix(spec, "https://") {
		return nil
	}
	_, name, _ := strings.Cut(spec, "/")
	for _, ext := range []string{".json", ".tiktoken", ".txt"} {
		if strings.HasSuffix(name, ext) {
			return fmt.Errorf("spec: tokenizer file %s: no such file (a path, by its %s ending, not a Hugging Face id ORG/NAME): check the path, relative to the directory the command runs in", spec, ext)
		}
	}
	return nil
}

// orLocalPath adds to a failed load of the Hugging Face id spec that it is no local
// path either where its ORG is a local directory (a typo in data/tok). Such an id is
// still looked for in the cache and on Hugging Face: a directory named as an ORG (one
// holding datasets made with that ORG's tokenizers: --output ORG/NAME-tokens) does not
// make a real id a path.
func orLocalPath(spec string) func(*tokenize.Tokenizer, error) (*tokenize.Tokenizer, error) {
	return func(tok *tokenize.Tokenizer, err error) (*tokenize.Tokenizer, error) {
		if err == nil || strings.HasPrefix(spec, "http://") || strings.HasPrefix(spec, "https://") {
			return tok, err
		}
		org, _, _ := strings.Cut(spec, "/")
		if info, serr := os.Stat(org); serr == nil && info.IsDir() {
			return nil, fmt.Errorf("%w; nor is %s a local path: the local directory %s holds no such file or directory (check the path)", err, spec, org)
		}
		return tok, err
	}
}

// loadRemote downloads a remote SPEC's file into the cache (unless it is there) and
// loads it.
func loadRemote(ctx context.Context, spec, src, rel string, opt Options) (*tokenize.Tokenizer, error) {
	if opt.URL != "" {
		return nil, fmt.Errorf("spec: %s is already where to download from; --tokenizer-url applies to the built-in names (%s)", spec, strings.Join(Names(), ", "))
	}
	want := strings.ToLower(strings.TrimSpace(opt.SHA256))
	if b, err := hex.DecodeString(want); want != "" && (err != nil || len(b) != 32) {
		return nil, fmt.Errorf("spec: sha256 %q for %s is not 64 hex digits", opt.SHA256, spec)
	}
	root := opt.CacheDir
	if root == "" {
		var err error
		if root, err = DefaultCacheDir(); err != nil {
			return nil, err
		}
	}
	file := filepath.Join(root, rel)
	f := newFetcher(opt)
	f.mirror = "check the URL" // (--tokenizer-url is refused here, above)
	if src != spec {
		f.mirror = "set HF_ENDPOINT to use a mirror of Hugging Face"
	}
	data, err := f.cached(ctx, src, file, want)
	if err != nil {
		return nil, err
	}
	if want == "" {
		sum := sha256.Sum256(data)
		f.log.Warn("the tokenizer file is not checked against a known sha256: pass --tokenizer-sha256 to pin it",
			"tokenizer", spec, "url", src, "path", file, "sha256", hex.EncodeToString(sum[:]))
	}
	tok, err := loadFile(file)
	if err != nil {
		return nil, fmt.Errorf("%w (downloaded from %s)", err, src)
	}
	return tok, nil
}
