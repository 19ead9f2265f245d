package plot

import (
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"
	"math"
	"strconv"
)

// Chart geometry and colours.
const (
	width, height = 960, 600
	marginLeft    = 80
	marginRight   = 24
	marginTop     = 40
	marginBottom  = 56
)

var (
	white     = color.RGBA{255, 255, 255, 255}
	black     = color.RGBA{0, 0, 0, 255}
	gridColor = color.RGBA{225, 225, 225, 255}
	// TrainColor and ValColor are the curves' colours (matplotlib's first two).
	TrainColor = color.RGBA{31, 119, 180, 255}
	ValColor   = color.RGBA{255, 127, 14, 255}
)

// LossPNG reads metrics.jsonl (see ReadMetrics) from metrics and writes a PNG chart of
// the training loss per step and the validation loss on eval steps to w. A bad line is
// reported as a *LineError naming its line number.
func LossPNG(w io.Writer, metrics io.Reader) error {
	points, err := ReadMetrics(metrics)
	if err != nil {
		return fmt.Errorf("plot: %w", err)
	}
	img, err := Chart(points)
	if err != nil {
		return err
	}
	if err := png.Encode(w, img); err != nil {
		return fmt.Errorf("plot: writing the PNG: %w", err)
	}
	return nil
}

// Chart draws the loss chart of points (sorted by step, as ReadMetrics returns them).
func Chart(points []Point) (*image.RGBA, error) {
	var xmin, xmax int64 = math.MaxInt64, math.MinInt64
	ymin, ymax := math.Inf(1), math.Inf(-1)
	nTrain, nVal := 0, 0
	for _, p := range points {
		for _, y := range []float64{p.Loss, p.ValLoss} {
			if math.IsNaN(y) {
				continue
			}
			xmin, xmax = min(xmin, p.Step), max(xmax, p.Step)
			ymin, ymax = math.Min(ymin, y), math.Max(ymax, y)
		}
		if !math.IsNaN(p.Loss) {
			nTrain++
		}
		if !math.IsNaN(p.ValLoss) {
			nVal++
		}
	}
	if nTrain+nVal == 0 {
		return nil, errors.New("plot: no loss or val_loss values to plot (is metrics.jsonl empty?)")
	}
	if xmax == xmin {
		xmin, xmax = xmin-1, xmax+1
	}
	if pad := (ymax - ymin) * 0.05; pad > 0 {
		ymin, ymax = ymin-pad, ymax+pad
	} else {
		ymin, ymax = ymin-0.5, ymax+0.5
	}

	c := newCanvas(width, height, white)
	plotArea := image.Rect(marginLeft, marginTop, width-marginRight, height-marginBottom)
	fx := func(step int64) int {
		return plotArea.Min.X + int(math.Round(float64(step-xmin)/float64(xmax-xmin)*float64(plotArea.Dx()-1)))
	}
	fy := func(y float64) int {
		return plotArea.Max.Y - 1 - int(math.Round((y-ymin)/(ymax-ymin)*float64(plotArea.Dy()-1)))
	}

	// Grid, ticks and tick labels.
	yt, yd := niceTicks(ymin, ymax, 8)
	for _, y := range yt {
		py := fy(y)
		c.fill(image.Rect(plotArea.Min.X, py, plotArea.Max.X, py+1), gridColor)
		c.fill(image.Rect(plotArea.Min.X-5, py, plotArea.Min.X, py+1), black)
		label := strconv.FormatFloat(y, 'f', yd, 64)
		c.text(plotArea.Min.X-8-textWidth(label), py-face.Height/2, label, black)
	}
	xt, _ := niceTicks(float64(xmin), float64(xmax), 8)
	for _, x := range xt {
		if x != math.Trunc(x) {
			continue // steps are integers
		}
		px := fx(int64(x))
		c.fill(image.Rect(px, plotArea.Min.Y, px+1, plotArea.Max.Y), gridColor)
		c.fill(image.Rect(px, plotArea.Max.Y, px+1, plotArea.Max.Y+5), black)
		label := strconv.FormatInt(int64(x), 10)
		c.text(px-textWidth(label)/2, plotArea.Max.Y+8, label, black)
	}
	// Axes and their labels.
	c.fill(image.Rect(plotArea.Min.X-1, plotArea.Min.Y, plotArea.Min.X, plotArea.Max.Y+1), black)
	c.fill(image.Rect(plotArea.Min.X-1, plotArea.Max.Y, plotArea.Max.X, plotArea.Max.Y+1), black)
	c.text(plotArea.Min.X+plotArea.Dx()/2-textWidth("step")/2, height-marginBottom+28, "step", black)
	c.textUp(12, plotArea.Min.Y+plotArea.Dy()/2-textWidth("loss")/2, "loss", black)
	title := fmt.Sprintf("loss: %d steps", nTrain)
	if nVal > 0 {
		title += fmt.Sprintf(", %d evals", nVal)
	}
	c.text(width/2-textWidth(title)/2, 14, title, black)

	// Curves, clipped to the plot area: training loss thin, validation loss thick with
	// markers on the eval steps.
	c.clip = plotArea
	curve := func(get func(Point) float64, w int, col color.RGBA, marker bool) {
		havePrev := false
		var px, py int
		for _, p := range points {
			y := get(p)
			if math.IsNaN(y) {
				continue
			}
			x, yy := fx(p.Step), fy(y)
			if havePrev {
				c.line(px, py, x, yy, w, col)
			}
			if marker {
				c.dot(x, yy, 5, col)
			}
			px, py, havePrev = x, yy, true
		}
		if !havePrev {
			return
		}
		if nPoints := map[bool]int{true: nVal, false: nTrain}[marker]; nPoints == 1 {
			c.dot(px, py, 3, col) // a single point has no line
		}
	}
	curve(func(p Point) float64 { return p.Loss }, 1, TrainColor, false)
	curve(func(p Point) float64 { return p.ValLoss }, 2, ValColor, true)
	c.clip = c.img.Bounds()

	// Legend, top right inside the plot area.
	entries := []struct {
		label string
		col   color.RGBA
	}{{"train loss", TrainColor}}
	if nVal > 0 {
		entries = append(entries, struct {
			label string
			col   color.RGBA
		}{"val loss", ValColor})
	}
	lw := 30 + textWidth("train loss") + 12
	lh := 8 + len(entries)*18
	box := image.Rect(plotArea.Max.X-lw-10, plotArea.Min.Y+10, plotArea.Max.X-10, plotArea.Min.Y+10+lh)
	c.fill(box, black)
	c.fill(box.Inset(1), white)
	for i, e := range entries {
		y := box.Min.Y + 6 + i*18
		c.fill(image.Rect(box.Min.X+8, y+5, box.Min.X+26, y+8), e.col)
		c.text(box.Min.X+32, y, e.label, black)
	}
	return c.img, nil
}
