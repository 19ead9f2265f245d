package prep

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"gptkit/internal/progress"
)

// PrintCatalog writes the catalog for people (`prep list`): a table with one row per
// corpus, then each corpus's files, sources and notes.
func PrintCatalog(w io.Writer) error {
	catalog := Catalog()
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tALIASES\tFILES\tSIZE\tSPLITS\tTOKENIZER\tVERIFIED SOURCE")
	for _, c := range catalog {
		size := "unknown"
		if total, known := c.TotalSize(); known {
			size = progress.FormatBytes(total)
		}
		aliases := strings.Join(c.Aliases, ",")
		if aliases == "" {
			aliases = "-"
		}
		verified := "no"
		if c.HasVerifiedSource() {
			verified = "yes"
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\t%s\n", c.Name, aliases, len(c.Files), size, strings.Join(c.Splits(), ","), c.DefaultTokenizer, verified)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, c := range catalog {
		fmt.Fprintf(w, "\n%s: %s\n", c.Name, c.Description)
		printFiles(w, c)
		printSources(w, c)
		fmt.Fprintf(w, "  notes:\n%s", wrap(c.Notes, "    ", 96))
	}
	_, err := fmt.Fprintf(w, "\n%s", wrap("No source was fetched when this catalog was written: \"unverified\" sources are leads, and a file is checked against its size and sha256 only where they are known (the catalog, --checksums FILE, or the mirror's SHA256SUMS). --mirror BASE must serve the file names above under BASE; BASE/SHA256SUMS, if present, is used.", "", 100))
	return err
}

// printFiles lists c's files, folding runs of three or more with the same split and
// no known size or sha256 into one line.
func printFiles(w io.Writer, c Corpus) {
	fmt.Fprintln(w, "  files:")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for i := 0; i < len(c.Files); {
		f := c.Files[i]
		j := i + 1
		for j < len(c.Files) && c.Files[j].Split == f.Split && unknown(c.Files[j]) && unknown(f) {
			j++
		}
		name, size, sum := f.Name, "unknown", "unknown"
		if j-i >= 3 {
			name = fmt.Sprintf("%s … %s (%d files)", f.Name, c.Files[j-1].Name, j-i)
		} else {
			j = i + 1
			if f.Size > 0 {
				size = fmt.Sprintf("%d bytes", f.Size)
			}
			if f.SHA256 != "" {
				sum = f.SHA256
			}
		}
		fmt.Fprintf(tw, "    %s\t%s\tsize %s\tsha256 %s\n", name, f.Split, size, sum)
		i = j
	}
	tw.Flush()
}

// unknown reports whether neither f's size nor its sha256 is known.
func unknown(f CorpusFile) bool { return f.Size == 0 && f.SHA256 == "" }

// printSources lists the sources of c's files in order. Where every file's i-th
// source is BASE + its name, it prints BASE once; otherwise every URL.
func printSources(w io.Writer, c Corpus) {
	fmt.Fprintln(w, "  sources, tried in order (a file's URL is the base + its name):")
	for i := 0; ; i++ {
		var bases []string
		var first Source
		for _, f := range c.Files {
			if i < len(f.Sources) {
				if len(bases) == 0 {
					first = f.Sources[i]
				}
				bases = append(bases, strings.TrimSuffix(f.Sources[i].URL, f.Name))
			}
		}
		if len(bases) == 0 {
			return
		}
		same := len(bases) == len(c.Files)
		for _, b := range bases {
			same = same && b == bases[0] && strings.HasSuffix(b, "/")
		}
		if same {
			fmt.Fprintf(w, "    %d. %s  [%s]\n%s", i+1, bases[0], verifiedWord(first), wrap(first.Note, "       ", 96))
			continue
		}
		for _, f := range c.Files {
			if i < len(f.Sources) {
				fmt.Fprintf(w, "    %d. %s  [%s]\n%s", i+1, f.Sources[i].URL, verifiedWord(f.Sources[i]), wrap(f.Sources[i].Note, "       ", 96))
			}
		}
	}
}

// verifiedWord marks a source verified or unverified.
func verifiedWord(s Source) string {
	if s.Verified {
		return "verified"
	}
	return "unverified"
}

// wrap breaks text into lines of at most width bytes (longer words stay whole), each
// starting with indent and ending with a newline.
func wrap(text, indent string, width int) string {
	var b strings.Builder
	line := indent
	for _, word := range strings.Fields(text) {
		if len(line) > len(indent) && len(line)+1+len(word) > width {
			b.WriteString(line + "\n")
			line = indent
		}
		if len(line) > len(indent) {
			line += " "
		}
		line += word
	}
	if len(line) > len(indent) {
		b.WriteString(line + "\n")
	}
	return b.String()
}
