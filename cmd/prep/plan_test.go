package main

import "testing"

// TestPlanSummary: the download plan's line reads as a sentence. It once said "about
// under a second at 1 Gbit/s" for any file under 125 MB (every test corpus, the Pile's
// val and test), and ran "size unknown (...)" into the directory without a comma; and
// a resumed download was announced at its full size, with the times of all of it.
func TestPlanSummary(t *testing.T) {
	for _, tt := range []struct {
		n              int
		total, have    int64
		unknown, asked int
		want           string
	}{
		{1, 1_700_000, 0, 0, 1, "1 file, 1.7 MB (sizes from the server): under a second at 1 Gbit/s, under a second at 100 Mbit/s,"},
		{1, 50_000_000, 0, 0, 0, "1 file, 50.0 MB: under a second at 1 Gbit/s, about 4 s at 100 Mbit/s,"},
		{32, 1_250_000_000, 0, 0, 32, "32 files, 1.2 GB (sizes from the server): about 10 s at 1 Gbit/s, about 2 min at 100 Mbit/s,"},
		{1, 0, 0, 1, 0, "1 file, size unknown (neither the catalog nor the server says),"},
		// A resumed download: what is left, of the whole, and the time of what is left.
		{1, 1_000_000_000, 900_000_000, 0, 0, "1 file, 100.0 MB of 1.0 GB left: under a second at 1 Gbit/s, about 8 s at 100 Mbit/s,"},
		{2, 1_000_000_000, 900_000_000, 1, 0, "2 files, at least 100.0 MB of 1.0 GB left (1 of unknown size): under a second at 1 Gbit/s, about 8 s at 100 Mbit/s,"},
	} {
		if got := planSummary(tt.n, tt.total, tt.have, tt.unknown, tt.asked); got != tt.want {
			t.Errorf("planSummary(%d, %d, %d, %d, %d)\n got %q\nwant %q", tt.n, tt.total, tt.have, tt.unknown, tt.asked, got, tt.want)
		}
	}
}
