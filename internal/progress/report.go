package progress

import (
	"fmt"
	"io"
	"strings"
	"time"
)

// report writes the current state: a redraw of the live line, or a Log line.
func (b *Bar) report(now time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.ended {
		return
	}
	switch b.mode {
	case Live:
		io.WriteString(b.w, "\r"+b.liveLine(now)+"\x1b[K")
	case Log:
		b.logged = true
		b.log(now, b.label)
	}
}

// finish writes the end: the summary or, without one, what Stop writes.
func (b *Bar) finish(now time.Time, summary bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.ended = true
	switch {
	case b.mode == Live && summary:
		io.WriteString(b.w, "\r"+b.summaryLine(now)+"\x1b[K\n")
	case b.mode == Live:
		io.WriteString(b.w, "\r"+b.liveLine(now)+"\x1b[K\n")
	case b.mode == Log && summary && (b.logged || !b.quiet):
		b.log(now, b.label+" done")
	}
}

// stats are the figures of a Bar at one time.
type stats struct {
	bytes, docs int64
	tokens      int64 // 0: not counted
	elapsed     time.Duration
	mbPerS      float64 // average of this run's bytes (not AddSkipped's), since the start or, with skipped bytes, since this run's first (workTime)
	tokPerS     float64 // average over the same time
	percent     float64 // < 0: no total
	eta         time.Duration
	etaKnown    bool
}

func (b *Bar) stats(now time.Time) stats {
	s := stats{bytes: b.bytes.Load(), docs: b.docs.Load(), tokens: b.tokens.Load(), elapsed: max(now.Sub(b.start), 0), percent: -1}
	var rate float64 // bytes per second, of this run's work: the skipped bytes are the baseline
	if secs := b.workTime(now, s.elapsed).Seconds(); secs > 0 {
		rate = float64(max(s.bytes-b.skipped.Load(), 0)) / secs
		s.mbPerS = rate / 1e6
		s.tokPerS = float64(s.tokens) / secs
	}
	if b.total > 0 {
		s.percent = min(100, 100*float64(s.bytes)/float64(b.total))
		if rate > 0 {
			s.eta = time.Duration(float64(max(b.total-s.bytes, 0)) / rate * float64(time.Second))
			s.etaKnown = true
		}
	}
	return s
}

// workTime is the time the rates are measured over: elapsed, the time since the start,
// or, where bytes were skipped (a resumed run reading past an earlier run's work), the
// time since the skip phase ended (Bar.worked), which leaves it out.
func (b *Bar) workTime(now time.Time, elapsed time.Duration) time.Duration {
	if b.skipped.Load() == 0 {
		return elapsed
	}
	w := b.worked.Load()
	if w == 0 {
		return 0
	}
	return max(now.Sub(time.Unix(0, w)), 0)
}

// liveLine is the line drawn on a terminal:
//
//	encode  312.4 MB / 1.2 GB  26%  48.1 MB/s  1,203,334 docs  12.3M tok/s  ETA 0:19
//	encode  312.4 MB  48.1 MB/s  1,203,334 docs  0:07        (no total, no tokens counted)
func (b *Bar) liveLine(now time.Time) string {
	s := b.stats(now)
	parts := []string{b.label, FormatBytes(s.bytes)}
	if s.percent >= 0 {
		parts[1] += " / " + FormatBytes(b.total)
		parts = append(parts, fmt.Sprintf("%.0f%%", s.percent))
	}
	parts = append(parts, fmt.Sprintf("%.1f MB/s", s.mbPerS))
	if !b.noDocs {
		parts = append(parts, formatCount(s.docs)+" docs")
	}
	if s.tokens > 0 {
		parts = append(parts, formatRate(s.tokPerS)+" tok/s")
	}
	switch {
	case s.etaKnown:
		parts = append(parts, "ETA "+formatDuration(s.eta))
	case s.percent < 0:
		parts = append(parts, formatDuration(s.elapsed))
	}
	return strings.Join(parts, "  ")
}

// summaryLine is the live line's last state:
//
//	encode  1.2 GB  48.1 MB/s  1,203,334 docs  300,112,004 tokens  12.3M tok/s  in 0:25
func (b *Bar) summaryLine(now time.Time) string {
	s := b.stats(now)
	parts := []string{b.label, FormatBytes(s.bytes), fmt.Sprintf("%.1f MB/s", s.mbPerS)}
	if !b.noDocs {
		parts = append(parts, formatCount(s.docs)+" docs")
	}
	if s.tokens > 0 {
		parts = append(parts, formatCount(s.tokens)+" tokens", formatRate(s.tokPerS)+" tok/s")
	}
	return strings.Join(append(parts, "in "+formatDuration(s.elapsed)), "  ")
}

// formatRate writes a rate with an SI suffix: 950, 12.3k, 4.56M.
func formatRate(x float64) string {
	switch {
	case x >= 1e9:
		return fmt.Sprintf("%.2fG", x/1e9)
	case x >= 1e6:
		return fmt.Sprintf("%.2fM", x/1e6)
	case x >= 1e3:
		return fmt.Sprintf("%.1fk", x/1e3)
	}
	return fmt.Sprintf("%.0f", x)
}

// log writes an Info line with message msg.
func (b *Bar) log(now time.Time, msg string) {
	s := b.stats(now)
	args := []any{"bytes", s.bytes}
	if s.percent >= 0 {
		args = append(args, "total_bytes", b.total, "percent", round1(s.percent))
	}
	if !b.noDocs {
		args = append(args, "docs", s.docs)
	}
	args = append(args, "mb_per_s", round1(s.mbPerS))
	if s.tokens > 0 {
		args = append(args, "tokens", s.tokens, "tokens_per_s", int64(s.tokPerS))
	}
	args = append(args, "elapsed_s", round1(s.elapsed.Seconds()))
	if s.etaKnown && !b.ended {
		args = append(args, "eta_s", round1(s.eta.Seconds()))
	}
	b.logger.Info(msg, args...)
}

func round1(x float64) float64 { return float64(int64(x*10+0.5)) / 10 }

// FormatBytes formats n bytes in decimal units: 999 B, 1.0 kB, 312.4 MB, 1.2 GB.
func FormatBytes(n int64) string {
	if n < 1000 {
		return fmt.Sprintf("%d B", n)
	}
	x := float64(n)
	for _, unit := range []string{"kB", "MB", "GB", "TB"} {
		if x /= 1000; x < 999.95 {
			return fmt.Sprintf("%.1f %s", x, unit)
		}
	}
	return fmt.Sprintf("%.1f PB", x/1000)
}

// formatCount formats n with thousands separators: 1,203,334.
func formatCount(n int64) string {
	s := fmt.Sprint(n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	if neg {
		b.WriteByte('-')
	}
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// formatDuration formats d as m:ss, or h:mm:ss from an hour up.
func formatDuration(d time.Duration) string {
	secs := int64(d.Round(time.Second) / time.Second)
	if secs >= 3600 {
		return fmt.Sprintf("%d:%02d:%02d", secs/3600, secs/60%60, secs%60)
	}
	return fmt.Sprintf("%d:%02d", secs/60, secs%60)
}
