package plot

import (
	"bytes"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"math"
	"os"
	"strings"
	"testing"
)

// syntheticMetrics is a 500-step run: loss decays from ~4.2 with noise; val every 50.
func syntheticMetrics(steps int) string {
	var b strings.Builder
	for s := range steps {
		loss := 1.5 + 2.7*math.Exp(-float64(s)/120) + 0.05*math.Sin(float64(s)*1.7)
		fmt.Fprintf(&b, `{"step":%d,"loss":%.4f,"lr":0.001,"grad_norm":0.5,"tokens_per_s":9000`, s, loss)
		if s%50 == 0 || s == steps-1 {
			fmt.Fprintf(&b, `,"val_loss":%.4f`, loss+0.1)
		}
		b.WriteString("}\n")
	}
	return b.String()
}

func count(img image.Image, col color.RGBA, r image.Rectangle) int {
	n := 0
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			if color.RGBAModel.Convert(img.At(x, y)).(color.RGBA) == col {
				n++
			}
		}
	}
	return n
}

func TestLossPNG(t *testing.T) {
	var buf bytes.Buffer
	if err := LossPNG(&buf, strings.NewReader(syntheticMetrics(500))); err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if b := img.Bounds(); b.Dx() != width || b.Dy() != height {
		t.Fatalf("size %v", b)
	}
	if os.Getenv("PLOT_SAVE") != "" {
		f, _ := os.Create(os.Getenv("PLOT_SAVE"))
		png.Encode(f, img)
		f.Close()
	}
	plotArea := image.Rect(marginLeft, marginTop, width-marginRight, height-marginBottom)
	midX := plotArea.Min.X + plotArea.Dx()/2
	midY := plotArea.Min.Y + plotArea.Dy()/2
	left, right := image.Rect(plotArea.Min.X, plotArea.Min.Y, midX, plotArea.Max.Y), image.Rect(midX, plotArea.Min.Y, plotArea.Max.X, plotArea.Max.Y)
	top, bottom := image.Rect(plotArea.Min.X, plotArea.Min.Y, plotArea.Max.X, midY), image.Rect(plotArea.Min.X, midY, plotArea.Max.X, plotArea.Max.Y)
	// Both curves are drawn; a falling loss puts most of the curve low and on the right.
	if n := count(img, TrainColor, plotArea); n < 500 {
		t.Fatalf("%d train-coloured pixels", n)
	}
	if n := count(img, ValColor, plotArea); n < 100 {
		t.Fatalf("%d val-coloured pixels", n)
	}
	if count(img, TrainColor, right) < count(img, TrainColor, left)/2 || count(img, TrainColor, bottom) < 3*count(img, TrainColor, top) {
		t.Error("the train curve is not where a falling loss should be")
	}
	// The axes and labels are black; nothing is drawn outside the image's margins' use.
	if n := count(img, black, image.Rect(0, 0, marginLeft, height)); n < 100 {
		t.Errorf("%d black pixels left of the plot: no y tick labels?", n)
	}
	if n := count(img, black, image.Rect(0, height-marginBottom, width, height)); n < 100 {
		t.Errorf("%d black pixels below the plot: no x tick labels?", n)
	}
}

func TestLossPNGEdgeCases(t *testing.T) {
	for _, in := range []string{
		`{"step":0,"loss":3}`,                                // one point
		`{"step":5,"val_loss":2}`,                            // only a val point
		"{\"step\":1,\"loss\":2}\n{\"step\":2,\"loss\":2}\n", // flat
		`{"step":0,"loss":1e6}` + "\n" + `{"step":1,"loss":1e-6}`,
	} {
		if err := LossPNG(&bytes.Buffer{}, strings.NewReader(in)); err != nil {
			t.Errorf("%q: %v", in, err)
		}
	}
	if err := LossPNG(&bytes.Buffer{}, strings.NewReader("\n")); err == nil || !strings.Contains(err.Error(), "no loss") {
		t.Errorf("empty: %v", err)
	}
}

func TestReadMetrics(t *testing.T) {
	in := "{\"step\":2,\"loss\":3.5}\n\n{\"step\":1,\"loss\":4,\"val_loss\":4.5,\"lr\":1e-3}\n{\"step\":2,\"loss\":3.25,\"val_loss\":null}\n"
	ps, err := ReadMetrics(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	if len(ps) != 2 || ps[0].Step != 1 || ps[0].ValLoss != 4.5 || ps[1].Step != 2 || ps[1].Loss != 3.25 || !math.IsNaN(ps[1].ValLoss) {
		t.Fatalf("got %+v", ps)
	}
	for _, c := range []struct {
		in   string
		line int
		want string
	}{
		{"{\"step\":1,\"loss\":1}\n{\"step\":2,\"loss\":\n", 2, "not a JSON object"},
		{"{\"step\":1}\n\n{\"loss\":1}\n", 3, `no "step"`},
		{`{"step":1.5,"loss":1}`, 1, "not a non-negative integer"},
		{`{"step":-1,"loss":1}`, 1, "not a non-negative integer"},
		{`{"step":1,"loss":"x"}`, 1, "not a JSON object"},
		{`{"step":1,"loss":1e999}`, 1, "not a finite number"},
		{`{"step":1} {"step":2}`, 1, "more than one JSON value"},
		{`[1]`, 1, "not a JSON object"},
		{"{\"step\":1}\n" + `{"step":2,"x":"` + strings.Repeat("a", maxLine) + `"}`, 2, "longer than"},
	} {
		_, err := ReadMetrics(strings.NewReader(c.in))
		var le *LineError
		if !errors.As(err, &le) || le.Line != c.line || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%.60q: err %v, want line %d with %q", c.in, err, c.line, c.want)
		}
	}
}

func TestNiceTicks(t *testing.T) {
	for _, c := range []struct {
		lo, hi float64
		want   []float64
		dec    int
	}{
		{0, 10, []float64{0, 2, 4, 6, 8, 10}, 0},
		{1.37, 4.42, []float64{1.5, 2, 2.5, 3, 3.5, 4}, 1},
		{0, 5000, []float64{0, 1000, 2000, 3000, 4000, 5000}, 0},
		{0.001, 0.0032, []float64{0.001, 0.0015, 0.002, 0.0025, 0.003}, 4},
	} {
		got, dec := niceTicks(c.lo, c.hi, 5)
		if len(got) != len(c.want) || dec != c.dec {
			t.Errorf("niceTicks(%v, %v) = %v, %d; want %v, %d", c.lo, c.hi, got, dec, c.want, c.dec)
			continue
		}
		for i := range got {
			if math.Abs(got[i]-c.want[i]) > 1e-12 {
				t.Errorf("niceTicks(%v, %v) = %v; want %v", c.lo, c.hi, got, c.want)
			}
		}
	}
}

// FuzzReadMetrics: the parser never panics, and a parsed file draws.
func FuzzReadMetrics(f *testing.F) {
	f.Add([]byte(syntheticMetrics(3)))
	f.Add([]byte(`{"step":1,"loss":null,"val_loss":2}`))
	f.Add([]byte("{\"step\":9223372036854775807,\"loss\":1}\n{\"step\":0,\"loss\":-1e300}"))
	f.Fuzz(func(t *testing.T, data []byte) {
		ps, err := ReadMetrics(bytes.NewReader(data))
		if err != nil {
			var le *LineError
			if !errors.As(err, &le) || le.Line < 1 {
				t.Fatalf("error %v is not a *LineError with a line number", err)
			}
			return
		}
		for i := 1; i < len(ps); i++ {
			if ps[i].Step <= ps[i-1].Step {
				t.Fatalf("steps not strictly increasing: %+v", ps)
			}
		}
		if len(ps) < 50 {
			Chart(ps) // must not panic
		}
	})
}

func BenchmarkLossPNG(b *testing.B) {
	metrics := syntheticMetrics(20000)
	for b.Loop() {
		if err := LossPNG(&bytes.Buffer{}, strings.NewReader(metrics)); err != nil {
			b.Fatal(err)
		}
	}
}

// TestReadMetricsTornLastLine: a last line cut short (a run writing it, or one killed
// while it did) or of zero bytes (a crash's unwritten blocks) is left out, so a running run plots; the same line with its newline,
// or a bad line before others, is an error.
func TestReadMetricsTornLastLine(t *testing.T) {
	whole := `{"step":1,"loss":2}` + "\n" + `{"step":2,"loss":1.5}` + "\n"
	points, err := ReadMetrics(strings.NewReader(whole + `{"step":3,"lo`))
	if err != nil || len(points) != 2 {
		t.Fatalf("torn last line: %v, %d points", err, len(points))
	}
	// A crash's unwritten last blocks: zero bytes, after a whole line or a part of one.
	for _, tail := range []string{"\x00\x00\x00\x00", `{"step":3,"lo` + "\x00\x00"} {
		points, err := ReadMetrics(strings.NewReader(whole + tail))
		if err != nil || len(points) != 2 {
			t.Errorf("last line %q: %v, %d points", tail, err, len(points))
		}
	}
	for _, in := range []string{whole + `{"step":3,"lo` + "\n", `{"step":3,"lo` + "\n" + whole, "\x00\x00\n" + whole, whole + `{"step":3,"loss":1}x` + "\x00"} {
		if _, err := ReadMetrics(strings.NewReader(in)); err == nil {
			t.Errorf("%q: no error", in)
		}
	}
}
