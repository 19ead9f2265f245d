package plot

import (
	"image"
	"image/color"
	"image/draw"
	"math"

	"golang.org/x/image/font"
	"golang.org/x/image/font/basicfont"
	"golang.org/x/image/math/fixed"
)

// canvas is an RGBA image with the few drawing primitives a line chart needs.
type canvas struct {
	img  *image.RGBA
	clip image.Rectangle // lines are clipped to this
}

func newCanvas(w, h int, bg color.Color) *canvas {
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	draw.Draw(img, img.Bounds(), image.NewUniform(bg), image.Point{}, draw.Src)
	return &canvas{img: img, clip: img.Bounds()}
}

func (c *canvas) fill(r image.Rectangle, col color.Color) {
	draw.Draw(c.img, r.Intersect(c.clip), image.NewUniform(col), image.Point{}, draw.Src)
}

// dot paints a width x width square centred on (x, y).
func (c *canvas) dot(x, y, width int, col color.RGBA) {
	lo := -(width - 1) / 2
	for dy := lo; dy < lo+width; dy++ {
		for dx := lo; dx < lo+width; dx++ {
			if p := (image.Point{X: x + dx, Y: y + dy}); p.In(c.clip) {
				c.img.SetRGBA(p.X, p.Y, col)
			}
		}
	}
}

// line draws a straight line (Bresenham) of the given width from (x0, y0) to (x1, y1).
func (c *canvas) line(x0, y0, x1, y1, width int, col color.RGBA) {
	dx, dy := abs(x1-x0), -abs(y1-y0)
	sx, sy := sign(x1-x0), sign(y1-y0)
	e := dx + dy
	for {
		c.dot(x0, y0, width, col)
		if x0 == x1 && y0 == y1 {
			return
		}
		e2 := 2 * e
		if e2 >= dy {
			e += dy
			x0 += sx
		}
		if e2 <= dx {
			e += dx
			y0 += sy
		}
	}
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

func sign(x int) int {
	switch {
	case x < 0:
		return -1
	case x > 0:
		return 1
	}
	return 0
}

var face = basicfont.Face7x13

// textWidth is the width in pixels of s in the bitmap font.
func textWidth(s string) int { return font.MeasureString(face, s).Ceil() }

// text draws s with its top-left corner at (x, y).
func (c *canvas) text(x, y int, s string, col color.Color) {
	d := font.Drawer{Dst: c.img, Src: image.NewUniform(col), Face: face, Dot: fixed.P(x, y+face.Ascent)}
	d.DrawString(s)
}

// textUp draws s rotated 90° counter-clockwise (reading bottom to top), its
// bounding box's top-left corner at (x, y).
func (c *canvas) textUp(x, y int, s string, col color.Color) {
	w, h := textWidth(s), face.Height
	tmp := newCanvas(w, h, color.Transparent)
	tmp.text(0, 0, s, col)
	for ty := range h {
		for tx := range w {
			if p := tmp.img.RGBAAt(tx, ty); p.A != 0 {
				c.img.SetRGBA(x+ty, y+w-1-tx, p)
			}
		}
	}
}

// niceTicks returns about n round tick values (1, 2 or 5 times a power of ten apart)
// covering [lo, hi], and the number of decimals that labels them exactly.
func niceTicks(lo, hi float64, n int) (ticks []float64, decimals int) {
	if !(hi > lo) {
		return []float64{lo}, 0
	}
	raw := (hi - lo) / float64(n)
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	var step float64
	switch f := raw / mag; {
	case f < 1.5:
		step = mag
	case f < 3:
		step = 2 * mag
	case f < 7:
		step = 5 * mag
	default:
		step = 10 * mag
	}
	decimals = max(0, int(-math.Floor(math.Log10(step)+1e-9)))
	first := math.Ceil(lo/step - 1e-9)
	for i := range 4 * n { // bounded: far from zero, float64 may not tell k from k+1
		v := (first + float64(i)) * step
		if v > hi+step*1e-9 || len(ticks) > 0 && v == ticks[len(ticks)-1] {
			break
		}
		ticks = append(ticks, v)
	}
	return ticks, decimals
}
