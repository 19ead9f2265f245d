package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strconv"
	"strings"

	"gptkit/internal/cli"
	"gptkit/internal/redact"
	"gptkit/pipelines"
	"gptkit/shards"
	"gptkit/storage"
)

// The flags --slurm handles itself: they are not passed on to the jobs it writes.
// --overwrite is done once, at submission (unpublishDataset): in the scripts it would
// make every rerun of a task redo its finished part.
var slurmOnlyFlags = map[string]bool{"slurm": true, "array-size": true, "sbatch-args": true, "dry-run": true,
	"num-workers": true, "worker-index": true, "merge-parts": true, "overwrite": true}

// slurmDir is where --slurm writes its scripts (DIR/NAME/slurm/) and the jobs their logs.
func (j *job) slurmDir() string { return filepath.Join(j.workDir(), "slurm") }

// scriptPaths are the array job's and the merge job's scripts.
func (j *job) scriptPaths() (tokenize, merge string) {
	return filepath.Join(j.slurmDir(), "tokenize.sbatch"), filepath.Join(j.slurmDir(), "merge.sbatch")
}

// jobArgs is the command line of the jobs --slurm writes: this one's corpus and flags,
// without the flags only --slurm reads, then extra.
func (j *job) jobArgs(extra ...string) []string {
	args := []string{j.sub}
	j.flagSet.Visit(func(fl *flag.Flag) {
		if slurmOnlyFlags[fl.Name] {
			return
		}
		dash := "--"
		if len(fl.Name) == 1 {
			dash = "-"
		}
		if list, ok := fl.Value.(*cli.ListFlag); ok {
			for _, v := range list.Values {
				args = append(args, dash+fl.Name+"="+v)
			}
			return
		}
		v := fl.Value.String()
		if fl.Name == "s3-endpoint" {
			v = redact.URL(v) // credentials there are never used (see storage): not written into scripts
		}
		args = append(args, dash+fl.Name+"="+v)
	})
	return append(args, extra...)
}

// shellQuote quotes s for a POSIX shell.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_=./:,@%+") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// sbatchLines turns --sbatch-args into #SBATCH lines: "--partition=cpu -t 60" is
// "#SBATCH --partition=cpu" and "#SBATCH -t 60". The arguments are split as a shell
// splits them ("--comment='a b'" is one), and each value is written as sbatch reads
// an #SBATCH line (sbatchQuote).
func sbatchLines(args string) ([]string, error) {
	fields, err := shellWords(args)
	if err != nil {
		return nil, fmt.Errorf("--sbatch-args %q: %w", args, err)
	}
	var lines []string
	for i := 0; i < len(fields); i++ {
		opt, val, hasVal := strings.Cut(fields[i], "=")
		line := opt
		switch {
		case !strings.HasPrefix(opt, "-"):
			line = sbatchQuote(fields[i]) // (sbatch will say what it makes of it)
		case hasVal:
			line += "=" + sbatchQuote(val)
		case i+1 < len(fields) && !strings.HasPrefix(fields[i+1], "-"):
			line += " " + sbatchQuote(fields[i+1])
			i++
		}
		lines = append(lines, "#SBATCH "+line)
	}
	return lines, nil
}

// sbatchReserved are the sbatch options the scripts set themselves (long name, short
// letter), and why one in --sbatch-args is refused: written after prep's own #SBATCH
// lines it would win, and --array=0-7 for an --array-size 16 ran 8 of the 16 parts
// (the merge failing on the rest) and made the merge an array of 8 merges at once.
var sbatchReserved = []struct{ long, short, why string }{
	{"--array", "-a", "the array is 0..W-1 for --array-size W, which is also the tasks' --num-workers: use --array-size (a rerun of some tasks: sbatch --array=I,J DIR/NAME/slurm/tokenize.sbatch)"},
	{"--chdir", "-D", "the jobs run in the directory prep runs in, where relative --input and -d paths are found: run prep from the directory you want"},
	{"--output", "-o", "the logs are DIR/NAME/slurm/logs/tokenize-ARRAY_TASK.out and merge-JOB.out, which the merge's messages name"},
	{"--wrap", "", "prep writes the jobs' scripts itself"},
}

// reservedSbatchOption says why --sbatch-args is refused when it sets an option the
// scripts set themselves (sbatchReserved), or "" (a malformed value is reported by
// sbatchLines).
func reservedSbatchOption(args string) string {
	fields, err := shellWords(args)
	if err != nil {
		return ""
	}
	for _, f := range fields {
		opt, _, _ := strings.Cut(f, "=")
		for _, r := range sbatchReserved {
			long := strings.HasPrefix(opt, "--") && len(opt) > 2 && strings.HasPrefix(r.long, opt) && (opt == r.long || len(opt) >= 4)
			if long || r.short != "" && strings.HasPrefix(f, r.short) && !strings.HasPrefix(f, "--") {
				return fmt.Sprintf("--sbatch-args: %s is set by prep --slurm: %s", f, r.why)
			}
		}
	}
	return ""
}

// shellWords splits s into words as a POSIX shell does, without expansions: blanks
// separate words, '...' and "..." quote (in "...", \ escapes ", \, $ and `), a
// backslash outside quotes escapes the next character.
func shellWords(s string) ([]string, error) {
	var (
		words  []string
		word   strings.Builder
		inWord bool
	)
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n':
			if inWord {
				words, inWord = append(words, word.String()), false
				word.Reset()
			}
			continue
		case c == '\\' && i+1 < len(s):
			i++
			word.WriteByte(s[i])
		case c == '\'':
			end := strings.IndexByte(s[i+1:], '\'')
			if end < 0 {
				return nil, fmt.Errorf("a ' at byte %d is not closed", i)
			}
			word.WriteString(s[i+1 : i+1+end])
			i += 1 + end
		case c == '"':
			j := i + 1
			for ; j < len(s) && s[j] != '"'; j++ {
				if s[j] == '\\' && j+1 < len(s) && strings.IndexByte("\"\\$`", s[j+1]) >= 0 {
					j++
				}
				word.WriteByte(s[j])
			}
			if j == len(s) {
				return nil, fmt.Errorf("a \" at byte %d is not closed", i)
			}
			i = j
		default:
			word.WriteByte(c)
		}
		inWord = true
	}
	if inWord {
		words = append(words, word.String())
	}
	return words, nil
}

// sbatchQuote writes v as sbatch reads a value on an #SBATCH line: as it is when it
// has no blank, quote, backslash or # (an unquoted # starts a comment there), else in
// double quotes with " and \ escaped by a backslash.
func sbatchQuote(v string) string {
	if v != "" && !strings.ContainsAny(v, " \t\n'\"\\#") {
		return v
	}
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(v) + `"`
}

// scripts returns the array job's and the merge job's scripts.
func (j *job) scripts() (tokenize, merge string, err error) {
	exe, err := os.Executable()
	if err != nil {
		return "", "", fmt.Errorf("find the prep executable for the jobs: %w", err)
	}
	cwd, err := os.Getwd()
	if err != nil {
		return "", "", err
	}
	w := j.flags.arraySize
	logs := filepath.Join(j.slurmDir(), "logs")
	tokPath, mergePath := j.scriptPaths()
	quote := func(args []string) string {
		q := []string{shellQuote(exe)}
		for _, a := range args {
			q = append(q, shellQuote(a))
		}
		return strings.Join(q, " ")
	}
	command := cli.OneLine(j.command) // a comment line
	lines, err := sbatchLines(j.flags.sbatchArgs)
	if err != nil {
		return "", "", err
	}
	user := strings.Join(lines, "\n")
	if user != "" {
		user += "\n"
	}
	tokenize = fmt.Sprintf(`#!/bin/bash
# prep %[1]s as a SLURM array job, written by: %[2]s
# Task I (SLURM_ARRAY_TASK_ID) tokenizes part I of %[3]d of the corpus into
# %[4]s/%[5]s/part-IIIII-of-%05[3]d/. A task that failed or was killed can be rerun
# alone, keeping the shards it had finished: sbatch --array=I %[6]s
# A finished task is not redone. Then merge: sbatch %[7]s
#SBATCH --job-name=prep-%[1]s
#SBATCH --array=0-%[8]d
#SBATCH --output=%[9]s
#SBATCH --chdir=%[10]s
%[11]sset -eu
exec %[12]s
`, j.name, command, w, j.output(), shards.PartsDir, shellQuote(tokPath), shellQuote(mergePath), w-1, sbatchQuote(logs+"/tokenize-%A_%a.out"), sbatchQuote(cwd), user,
		quote(j.jobArgs("--num-workers="+strconv.Itoa(w))))
	merge = fmt.Sprintf(`#!/bin/bash
# prep %[1]s: merges the %[2]d parts of the array job into %[3]s/manifest.json, written by: %[4]s
# It fails, naming them, while parts are missing: rerun those tasks
# (sbatch --array=I,J %[5]s), then this script again (sbatch %[6]s).
#SBATCH --job-name=prep-%[1]s-merge
#SBATCH --output=%[7]s
#SBATCH --chdir=%[8]s
%[9]sset -eu
exec %[10]s
`, j.name, w, j.output(), command, shellQuote(tokPath), shellQuote(mergePath), sbatchQuote(logs+"/merge-%j.out"), sbatchQuote(cwd), user,
		quote(j.jobArgs("--num-workers="+strconv.Itoa(w), "--merge-parts")))
	return tokenize, merge, nil
}

// submitSlurm implements --slurm: it downloads the corpus (here, where the internet is),
// writes the array job and the merge job that runs after it (whatever the tasks'
// outcome: it names the parts that are missing), submits both, and prints their ids and
// how to follow them. With --dry-run it only prints the scripts.
func (j *job) submitSlurm(ctx context.Context) int {
	who := "prep " + j.name
	if j.sub == "custom" {
		// A tokenizer without the end-of-document id every task would fail on, found
		// before the jobs are written and submitted. (prep NAME's tokenizer may need
		// its corpus downloaded first: its tasks say so.)
		tok, _, err := j.tokenizer(ctx, nil)
		if err != nil {
			return cli.Fail(j.stderr, who, err)
		}
		if err := j.checkEOD(tok); err != nil {
			return cli.Fail(j.stderr, who, err)
		}
	}
	tokScript, mergeScript, err := j.scripts()
	if err != nil {
		return cli.Fail(j.stderr, who, err)
	}
	tokPath, mergePath := j.scriptPaths()
	if j.flags.dryRun {
		fmt.Fprintf(j.stdout, "# %s\n%s\n# %s\n%s\n# submit with:\nsbatch --parsable %s\nsbatch --parsable --dependency=afterany:ARRAY_JOB_ID %s\n",
			tokPath, tokScript, mergePath, mergeScript, shellQuote(tokPath), shellQuote(mergePath))
		return cli.ExitOK
	}
	// Download here first: compute nodes often have no way out, and the tasks would all
	// wait on the same downloads anyway. The tasks find the files in place.
	if len(j.fetches) > 0 || j.beforeFetch != nil {
		j.log.Info("downloading before submitting the jobs", "dir", filepath.Join(j.workDir(), "downloads"))
	}
	if err := j.fetch(ctx); err != nil {
		return cli.Fail(j.stderr, who, cli.InterruptedResumable(ctx, err))
	}
	if _, err := j.splits(ctx); err != nil {
		return cli.Fail(j.stderr, who, cli.InterruptedResumable(ctx, err))
	}
	if j.flags.overwrite {
		if err := j.unpublishDataset(ctx); err != nil {
			return cli.Fail(j.stderr, who, cli.InterruptedResumable(ctx, err))
		}
	}
	if err := os.MkdirAll(filepath.Join(j.slurmDir(), "logs"), 0o777); err != nil {
		return cli.Fail(j.stderr, who, err)
	}
	for path, text := range map[string]string{tokPath: tokScript, mergePath: mergeScript} {
		if err := os.WriteFile(path, []byte(text), 0o755); err != nil {
			return cli.Fail(j.stderr, who, err)
		}
	}
	array, err := sbatch(ctx, tokPath)
	if err != nil {
		return cli.Fail(j.stderr, who, err)
	}
	merge, err := sbatch(ctx, "--dependency=afterany:"+array, mergePath)
	if err != nil {
		return cli.Fail(j.stderr, who, fmt.Errorf("%w (the array job %s was submitted: scancel it, or submit the merge yourself once it is done: sbatch %s)", err, array, shellQuote(mergePath)))
	}
	w := j.flags.arraySize
	fmt.Fprintf(j.stdout, "array job %s: %d tasks (%s)\nmerge job %s: runs after it (%s)\nfollow: squeue -j %s,%s; logs in %s\n",
		array, w, tokPath, merge, mergePath, array, merge, filepath.Join(j.slurmDir(), "logs"))
	return cli.ExitOK
}

// unpublishDataset is --slurm --overwrite's replacing, done once before the jobs are
// submitted: the merged manifest goes (with a single run's shards it lists, which the
// new parts' merge would not) and so do the parts' manifests, so that the tasks, run
// without --overwrite, make every part again (an unfinished part's journal of the old
// job is replaced, as for any changed job) and the merge publishes only theirs.
func (j *job) unpublishDataset(ctx context.Context) error {
	st, err := j.flags.s3.Open(ctx, j.output(), j.log)
	if err != nil {
		return err
	}
	if m, err := shards.ReadManifest(ctx, st, ""); err == nil {
		if err := st.Delete(ctx, shards.ManifestKey("")); err != nil {
			return fmt.Errorf("--overwrite: remove the dataset's manifest: %w", err)
		}
		for _, s := range m.Shards {
			if strings.HasPrefix(s.Prefix, shards.PartsDir+"/") {
				continue // a part's: rewritten by its task
			}
			for _, ext := range []string{".bin", ".idx"} {
				if err := st.Delete(ctx, shards.ShardKey("", s)+ext); err != nil && !errors.Is(err, storage.ErrNotExist) {
					return fmt.Errorf("--overwrite: remove the replaced dataset's shard %s: %w", s.Prefix, err)
				}
			}
		}
		j.log.Info("--overwrite: the finished dataset is unpublished; the jobs make it again", "dataset", j.output())
	}
	infos, err := st.List(ctx, shards.PartsDir+"/")
	if err != nil {
		return err
	}
	for _, in := range infos {
		if path.Base(in.Key) == shards.ManifestName {
			if err := st.Delete(ctx, in.Key); err != nil {
				return fmt.Errorf("--overwrite: remove %s: %w", in.Key, err)
			}
		}
	}
	return nil
}

// sbatch submits a job (sbatch --parsable ARGS...) and returns its id.
func sbatch(ctx context.Context, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "sbatch", append([]string{"--parsable"}, args...)...)
	var out, errOut strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		if errors.Is(err, exec.ErrNotFound) {
			return "", fmt.Errorf("sbatch is not on PATH: run prep --slurm on a SLURM login node (or --dry-run to see the scripts)")
		}
		return "", fmt.Errorf("sbatch %s: %v: %s", strings.Join(args, " "), err, cli.OneLine(errOut.String()))
	}
	id, _, _ := strings.Cut(strings.TrimSpace(out.String()), ";") // "ID" or "ID;cluster"
	if _, err := strconv.Atoi(id); err != nil {
		return "", fmt.Errorf("sbatch %s printed %q, not a job id", strings.Join(args, " "), out.String())
	}
	return id, nil
}

// merge implements --merge-parts: the dataset's manifest from its parts; the downloads
// go once it is written.
func (j *job) merge(ctx context.Context, st storage.Store) int {
	who := "prep " + j.name
	tokPath, mergePath := j.scriptPaths()
	opt := shards.MergePartsOptions{Count: max(j.flags.numWorkers, 0), Overwrite: j.flags.overwrite, Command: j.command}
	if _, err := os.Stat(tokPath); err == nil {
		opt.RerunHint = func(missing []int, _ int) string {
			ids := make([]string, len(missing))
			for i, m := range missing {
				ids[i] = strconv.Itoa(m)
			}
			return fmt.Sprintf("rerun those tasks, each keeping the shards it had finished (sbatch --array=%s %s), then merge again (sbatch --dependency=afterany:JOBID %s)",
				strings.Join(ids, ","), shellQuote(tokPath), shellQuote(mergePath))
		}
	}
	res, err := shards.MergeParts(ctx, st, "", opt)
	if err != nil {
		return cli.Fail(j.stderr, who, cli.InterruptedResumable(ctx, err))
	}
	// The parts must be this command's job: an array job that failed on every task
	// (made by a different job) is followed by its merge all the same (afterany), which
	// must not publish the old parts, nor remove the downloads the rerun needs.
	if diff, ok := j.settingsChanged(res.Manifest); ok && diff != "" {
		if !res.Already {
			if derr := st.Delete(context.WithoutCancel(ctx), shards.ManifestKey("")); derr != nil {
				j.log.Warn("could not remove the manifest merged from another job's parts", "err", derr)
			}
		}
		return cli.Fail(j.stderr, who, fmt.Errorf("the parts in %s were made with other settings (%s): not merged; rerun the tasks with this command line and --overwrite, then merge", j.output(), diff))
	}
	if res.Already {
		fmt.Fprintf(j.stderr, "%s: already merged from its %d parts\n", j.output(), res.Parts)
	}
	j.removeDownloads()
	m := res.Manifest
	fmt.Fprintf(j.stdout, "%s/manifest.json: %d documents, %d tokens, %d shards\n", j.output(), m.Documents, m.Tokens, len(m.Shards))
	// Each part checked its own share; the whole is checked here (a part over the
	// limit wrote its shards, and an array job's merge runs after it all the same).
	return j.checkFinishedErrorRate(pipelines.ManifestStats(m), "prep-report-part-*.json")
}
