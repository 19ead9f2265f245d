package plot

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
)

// Point is one step of metrics.jsonl; Loss and ValLoss are NaN where the line has none.
type Point struct {
	Step    int64
	Loss    float64
	ValLoss float64
}

// LineError is a bad line of metrics.jsonl; Line counts from 1.
type LineError struct {
	Line int
	Err  error
}

func (e *LineError) Error() string { return fmt.Sprintf("line %d: %v", e.Line, e.Err) }
func (e *LineError) Unwrap() error { return e.Err }

// maxLine bounds one metrics.jsonl line.
const maxLine = 1 << 20

// ReadMetrics parses metrics.jsonl: one JSON object per line with at least "step" (an
// integer) and any of "loss" and "val_loss" (numbers, or null); other fields (lr,
// grad_norm, tokens_per_s, ...) are ignored and blank lines skipped. A step logged twice
// (a run resumed from an earlier checkpoint logs those steps again) keeps the later
// line's values. A last line cut short (no newline at its end: a run writing it, or
// killed while it did; or zero bytes, what a crash can leave of a file's last blocks)
// is left out. Points come sorted by step. Errors are *LineError.
func ReadMetrics(r io.Reader) ([]Point, error) {
	tail := &lastByteReader{r: r}
	sc := bufio.NewScanner(tail)
	sc.Buffer(make([]byte, 64<<10), maxLine)
	byStep := map[int64]int{}
	var points []Point
	var bad error // a bad line, an error unless it is the last one, torn
	torn := false // bad is JSON cut short
	line := 0
	for sc.Scan() {
		line++
		if bad != nil {
			return nil, bad
		}
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		p, err := parseLine(b)
		if err != nil {
			// Cut short, or ending in zero bytes: a crash can leave the file's
			// last blocks allocated but never written (ext4, XFS after a power loss).
			unwritten := bytes.TrimRight(b, "\x00")
			bad, torn = &LineError{Line: line, Err: err}, len(unwritten) == 0 || cutShort(unwritten)
			continue
		}
		if i, ok := byStep[p.Step]; ok {
			points[i] = p
		} else {
			byStep[p.Step] = len(points)
			points = append(points, p)
		}
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			err = fmt.Errorf("longer than %d bytes", maxLine)
		}
		return nil, &LineError{Line: line + 1, Err: err}
	}
	if bad != nil && (!torn || tail.last == '\n') {
		return nil, bad // not a line being written
	}
	sort.Slice(points, func(a, b int) bool { return points[a].Step < points[b].Step })
	return points, nil
}

func parseLine(b []byte) (Point, error) {
	var v struct {
		Step    *json.Number `json:"step"`
		Loss    *json.Number `json:"loss"`
		ValLoss *json.Number `json:"val_loss"`
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return Point{}, fmt.Errorf("not a JSON object with numeric step, loss and val_loss: %v", err)
	}
	if dec.More() {
		return Point{}, errors.New("more than one JSON value on the line")
	}
	if v.Step == nil {
		return Point{}, errors.New(`no "step"`)
	}
	step, err := v.Step.Int64()
	if err != nil || step < 0 {
		return Point{}, fmt.Errorf("step %s is not a non-negative integer", *v.Step)
	}
	p := Point{Step: step, Loss: math.NaN(), ValLoss: math.NaN()}
	for _, f := range []struct {
		name string
		num  *json.Number
		dst  *float64
	}{{"loss", v.Loss, &p.Loss}, {"val_loss", v.ValLoss, &p.ValLoss}} {
		if f.num == nil {
			continue
		}
		x, err := f.num.Float64()
		if err != nil || math.IsInf(x, 0) {
			return Point{}, fmt.Errorf("%s %s is not a finite number", f.name, *f.num)
		}
		*f.dst = x
	}
	return p, nil
}

// cutShort reports whether b is the start of a JSON value cut off before its end.
func cutShort(b []byte) bool {
	var v json.RawMessage
	return errors.Is(json.NewDecoder(bytes.NewReader(b)).Decode(&v), io.ErrUnexpectedEOF)
}

// lastByteReader remembers the last byte read through it.
type lastByteReader struct {
	r    io.Reader
	last byte
}

func (l *lastByteReader) Read(p []byte) (int, error) {
	n, err := l.r.Read(p)
	if n > 0 {
		l.last = p[n-1]
	}
	return n, err
}
