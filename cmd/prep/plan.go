package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"gptkit/internal/fetch"
	"gptkit/internal/progress"
	"gptkit/prep"
)

// Bandwidths the download plan gives times for: 1 Gbit/s and 100 Mbit/s, in bytes/s.
var planBandwidths = []struct {
	name string
	rate float64
}{{"1 Gbit/s", 125e6}, {"100 Mbit/s", 12.5e6}}

// announce prints, before anything is downloaded, what will be: the number of files
// still missing, their size (the catalog's, else the server's answer to a HEAD request)
// and the time that takes at planBandwidths; then, loudly, the files no sha256 checks.
// Files already in place (a rerun, an embedded text) are not counted. It returns the
// size of each file still missing, by Dest: the catalog's, else the server's, else -1.
func (j *job) announce(ctx context.Context) map[string]int64 {
	var todo []fetch.File
	for _, f := range j.fetches {
		if _, err := os.Stat(f.Dest); err != nil {
			todo = append(todo, f)
		}
	}
	if len(todo) == 0 {
		return nil
	}
	who := "prep " + j.name
	sizes := remoteSizes(ctx, todo)
	known := make(map[string]int64, len(todo))
	for i, f := range todo {
		known[f.Dest] = sizes[i]
		if f.Size > 0 {
			known[f.Dest] = f.Size
		}
	}
	var total, have int64
	unknown, asked := 0, 0
	for i, f := range todo {
		switch {
		case f.Size > 0:
			total += f.Size
		case sizes[i] > 0:
			total += sizes[i]
			asked++
		default:
			unknown++
			continue
		}
		// A resumed download: only what its .part file does not hold is to come.
		if st, err := os.Stat(f.Dest + ".part"); err == nil && st.Size() <= known[f.Dest] {
			have += st.Size()
		}
	}
	fmt.Fprintf(j.stderr, "%s: to download: %s into %s\n", who, planSummary(len(todo), total, have, unknown, asked), filepath.Join(j.workDir(), "downloads"))
	var unverified []string
	for _, f := range todo {
		if f.SHA256 == "" {
			unverified = append(unverified, j.relName(f))
		}
	}
	if len(unverified) > 0 {
		// prep custom has neither --checksums nor --mirror.
		verify := "pass --checksums FILE, or a --mirror whose SHA256SUMS lists them, to have them verified"
		if j.sub == "custom" {
			verify = "to have them verified, download and check them yourself and pass the local files as --input"
		}
		fmt.Fprintf(j.stderr, "%s: WARNING: %s no known sha256: %s. Nothing can tell a damaged or substituted copy from the real one (only the file format is checked); %s.\n",
			who, plural(len(unverified), "file has", "files have"), foldNames(unverified), verify)
	}
	return known
}

// downloadTotal is what the download bar counts against: the bytes still to come
// (sizes of the files missing, by Dest, less what their .part files hold), 0 when a
// size is unknown; and the bytes of each file already here, which the progress
// callback's counts (resumed bytes included) start from.
func (j *job) downloadTotal(sizes map[string]int64) (total int64, have map[string]int64) {
	have = make(map[string]int64, len(j.fetches))
	unknown := false
	for _, f := range j.fetches {
		if st, err := os.Stat(f.Dest); err == nil {
			have[f.Dest] = st.Size()
			continue
		}
		size, ok := sizes[f.Dest]
		if !ok || size <= 0 {
			unknown = true
			continue
		}
		if st, err := os.Stat(f.Dest + ".part"); err == nil && st.Size() <= size {
			have[f.Dest] = st.Size()
		}
		total += size - have[f.Dest]
	}
	if unknown {
		total = 0
	}
	return total, have
}

// planSummary describes n files of total bytes, have of them already downloaded (in
// .part files, resumed), of which unknown have no known size and asked had theirs
// from the server. The times are those of what is left.
func planSummary(n int, total, have int64, unknown, asked int) string {
	s := plural(n, "file", "files")
	size := progress.FormatBytes(total)
	if have > 0 {
		size = fmt.Sprintf("%s of %s left", progress.FormatBytes(total-have), size)
	}
	switch {
	case unknown == n:
		return s + ", size unknown (neither the catalog nor the server says),"
	case unknown > 0:
		s += fmt.Sprintf(", at least %s (%d of unknown size)", size, unknown)
	default:
		s += ", " + size
	}
	total -= have
	if asked > 0 {
		s += " (sizes from the server)"
	}
	var times []string
	for _, b := range planBandwidths {
		d := time.Duration(float64(total) / b.rate * float64(time.Second))
		about := "about "
		if d < time.Second {
			about = "" // not "about under a second"
		}
		times = append(times, fmt.Sprintf("%s%s at %s", about, aboutDuration(d), b.name))
	}
	return s + ": " + strings.Join(times, ", ") + ","
}

// remoteSizes asks the servers for the sizes the catalog does not know, at most 8 at a
// time; -1 where nobody says.
func remoteSizes(ctx context.Context, files []fetch.File) []int64 {
	sizes := make([]int64, len(files))
	var wg sync.WaitGroup
	limit := make(chan struct{}, 8)
	for i, f := range files {
		sizes[i] = -1
		if f.Size > 0 || len(f.URLs) == 0 {
			continue
		}
		wg.Go(func() {
			limit <- struct{}{}
			defer func() { <-limit }()
			if n, err := fetch.RemoteSize(ctx, nil, f.URLs[0]); err == nil {
				sizes[i] = n
			}
		})
	}
	wg.Wait()
	return sizes
}

// relName is f's name relative to the downloads directory (the catalog's name).
func (j *job) relName(f fetch.File) string {
	if rel, err := filepath.Rel(filepath.Join(j.workDir(), "downloads"), f.Dest); err == nil && !strings.HasPrefix(rel, "..") {
		return filepath.ToSlash(rel)
	}
	return f.Dest
}

// foldNames lists names, folding more than four into "first, second … last (N files)".
func foldNames(names []string) string {
	if len(names) <= 4 {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s, %s … %s (%d files)", names[0], names[1], names[len(names)-1], len(names))
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// aboutDuration writes d for people: "under a second", "40 s", "12 min", "3.5 h".
func aboutDuration(d time.Duration) string {
	switch {
	case d < time.Second:
		return "under a second"
	case d < time.Minute:
		return fmt.Sprintf("%.0f s", d.Seconds())
	case d < time.Hour:
		return fmt.Sprintf("%.0f min", d.Minutes())
	}
	return fmt.Sprintf("%.1f h", d.Hours())
}

// writeEmbedded puts the corpus's files that the binary carries (tiny Shakespeare) in
// place of their downloads, where they are not yet, and says so on log. The download
// step then finds them complete (and checks their sha256 like any file's).
func writeEmbedded(c prep.Corpus, plan []fetch.File, stderr io.Writer) error {
	for i, cf := range c.Files {
		dest := plan[i].Dest
		if cf.Embedded == nil {
			continue
		}
		if _, err := os.Stat(dest); err == nil {
			continue
		}
		data, err := cf.Embedded()
		if err != nil {
			return err
		}
		if err := os.MkdirAll(filepath.Dir(dest), 0o777); err != nil {
			return err
		}
		tmp := dest + ".embedded"
		if err := os.WriteFile(tmp, data, 0o666); err != nil {
			return err
		}
		if err := os.Rename(tmp, dest); err != nil {
			return err
		}
		fmt.Fprintf(stderr, "prep %s: %s: the copy built into this binary (%s, sha256 %.12s…); --download fetches it from %s instead\n",
			c.Name, cf.Name, progress.FormatBytes(int64(len(data))), cf.SHA256, cf.Sources[0].URL)
	}
	return nil
}
