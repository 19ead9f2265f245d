package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strings"

	"gptkit/internal/cli"
	"gptkit/internal/fetch"
	"gptkit/internal/redact"
	"gptkit/pipelines"
	"gptkit/prep"
	"gptkit/storage"
	"gptkit/tokenize"
)

// runCustom implements `prep custom`: the user's own files (local, https:// or s3://).
func runCustom(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	c := cli.NewCommand("prep", "custom", "--input PATH_OR_URL... --name NAME -d DIR [flags]",
		"Tokenizes your own corpus: .jsonl, .jsonl.zst, .jsonl.gz, .json.gz, .txt,\n"+
			".txt.zst, .txt.gz (one document each), .zip (one document per member) and .parquet\n"+
			"(streamed by row group; --text-key names the column), from local paths, https:// URLs\n"+
			"or s3://bucket/key. Remote files are downloaded into DIR/NAME/downloads/ first\n"+
			"(resumable). Output: DIR/NAME/NAME_text_document*.{bin,idx}\n"+
			"and manifest.json. --slurm, --num-workers and --merge-parts work as for `prep NAME`.")
	var f jobFlags
	f.register(c)
	inputs := cli.ListFlag{Comma: true}
	c.Flags.Var(&inputs, "input", "input `PATHS_OR_URLS`, comma-separated or following the flag (required; may be repeated)")
	name := c.Flags.String("name", "", "dataset `NAME` (required)")
	appendEOD := c.Flags.Bool("append-eod", true, "append the tokenizer's end-of-document id after every document (false for a tokenizer without one, such as a chars.json)")
	if code, ok := c.Parse(cli.ExpandListArgs(args, "input"), stderr); !ok {
		return code
	}
	switch {
	case len(inputs.Values) == 0:
		return c.UsageError(stderr, "--input is required")
	case *name == "" || strings.ContainsAny(*name, "/\\"):
		return c.UsageError(stderr, "--name is required and may not contain a slash")
	}
	if msg := f.check(); msg != "" {
		return c.UsageError(stderr, msg)
	}
	log := newLogger(stderr)
	cli.WarnRepeatedInputs(log, inputs.Values)
	j := &job{name: *name, flags: &f, command: "prep custom " + strings.Join(args, " "), log: log, stdout: stdout, stderr: stderr, appendEOD: *appendEOD,
		sub: "custom", flagSet: c.Flags}
	local := make([]string, len(inputs.Values))
	var s3Inputs []int
	for i, in := range inputs.Values {
		if strings.Contains(in, "://") {
			j.inputs = append(j.inputs, in)
		} else {
			j.inputs = append(j.inputs, localInput(in))
		}
		switch {
		case strings.HasPrefix(in, "https://") || strings.HasPrefix(in, "http://"):
			u, err := url.Parse(in)
			if err != nil {
				return c.UsageError(stderr, fmt.Sprintf("--input %q: %v", in, err))
			}
			// Known before the download, not after: the copy's name comes from the
			// URL's path, and renaming it would not stop the next run downloading again.
			if err := prep.CheckFormatName(path.Base(u.Path)); err != nil {
				return cli.Fail(stderr, "prep custom", fmt.Errorf("--input %s: %w (its path's last element, %q, says no format)\n---> HINT: download it yourself under a name with one of those suffixes (curl -L -o corpus.jsonl.zst URL) and pass that file as --input", redact.URL(in), err, path.Base(u.Path)))
			}
			dest := filepath.Join(j.workDir(), "downloads", fmt.Sprintf("%03d-%s", i, path.Base(u.Path)))
			j.fetches = append(j.fetches, fetch.File{URLs: []string{in}, Dest: dest})
			local[i] = dest
		case strings.HasPrefix(in, "s3://"):
			if err := prep.CheckFormatName(path.Base(in)); err != nil {
				return cli.Fail(stderr, "prep custom", fmt.Errorf("--input %s: %w\n---> HINT: copy it under a name with one of those suffixes and pass that", in, err))
			}
			local[i] = filepath.Join(j.workDir(), "downloads", fmt.Sprintf("%03d-%s", i, path.Base(in)))
			s3Inputs = append(s3Inputs, i)
		default:
			local[i] = in
		}
	}
	// A local input that is not there fails before the remote ones are downloaded
	// (it failed after, and without a next step: "input stat X: no such file or
	// directory"); with none to download, once a finished dataset has not been found.
	if len(j.fetches) > 0 || len(s3Inputs) > 0 {
		if err := checkLocalInputs(inputs.Values); err != nil {
			return cli.Fail(stderr, "prep "+j.name, err)
		}
	}
	j.tokenizer = func(ctx context.Context, _ storage.Store) (*tokenize.Tokenizer, string, error) {
		return f.loadTokenizer(ctx, "gpt2", log)
	}
	j.splits = func(ctx context.Context) ([]pipelines.SplitInputs, error) {
		if err := checkLocalInputs(inputs.Values); err != nil {
			return nil, err
		}
		for _, i := range s3Inputs {
			if err := copyFromS3(ctx, inputs.Values[i], local[i], &f, log); err != nil {
				return nil, err
			}
		}
		return []pipelines.SplitInputs{{Inputs: local}}, nil
	}
	return j.run(ctx)
}

// checkLocalInputs fails, saying what to do, on the first local input (not a URL) that
// does not exist.
func checkLocalInputs(inputs []string) error {
	for _, in := range inputs {
		if strings.Contains(in, "://") {
			continue
		}
		if _, err := os.Stat(in); errors.Is(err, fs.ErrNotExist) {
			hint := "check the path"
			if strings.ContainsAny(in, "*?[") {
				hint = "a pattern is expanded by the shell, not by prep: leave it unquoted, and check that it matches"
			}
			return fmt.Errorf("--input %s: no such file (%s)", in, hint)
		}
	}
	return nil
}

// copyFromS3 downloads s3://bucket/key to dest (atomically: a temp file, then rename),
// unless dest already holds this version of the object: the same size and the ETag
// recorded beside it (dest.etag) when it was copied. An object replaced by another of
// the same size is copied again.
func copyFromS3(ctx context.Context, uri, dest string, f *jobFlags, log *slog.Logger) error {
	dir, key := path.Split(strings.TrimPrefix(uri, "s3://"))
	st, err := f.s3.Open(ctx, "s3://"+strings.TrimSuffix(dir, "/"), log)
	if err != nil {
		return err
	}
	info, err := st.Stat(ctx, key)
	if err != nil {
		return err
	}
	etagFile := dest + ".etag"
	if fi, err := os.Stat(dest); err == nil && fi.Size() == info.Size {
		if had, err := os.ReadFile(etagFile); err == nil && string(had) == info.ETag {
			return nil
		}
	}
	obj, err := st.Open(ctx, key)
	if err != nil {
		return err
	}
	defer obj.Close()
	if err := os.MkdirAll(filepath.Dir(dest), 0o777); err != nil {
		return err
	}
	// A temp file of its own: the tasks of an array job may copy the same input at once.
	out, err := os.CreateTemp(filepath.Dir(dest), filepath.Base(dest)+".*.part")
	if err != nil {
		return err
	}
	tmp := out.Name()
	defer os.Remove(tmp) // a no-op once renamed
	if _, err := io.Copy(out, obj); err != nil {
		out.Close()
		return fmt.Errorf("download %s: %w", uri, err)
	}
	if err := out.Sync(); err != nil {
		out.Close()
		return err
	}
	if err := out.Close(); err != nil {
		return err
	}
	// The old ETag goes before the new copy comes in, and the new one after: a crash
	// between the two leaves a copy with none, which the next run makes again.
	if err := os.Remove(etagFile); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if err := os.Rename(tmp, dest); err != nil {
		return err
	}
	return os.WriteFile(etagFile, []byte(info.ETag), 0o666)
}
