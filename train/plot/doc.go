// Package plot draws a run's loss curves (loss.png) from its metrics.jsonl: training
// loss per step and validation loss on eval steps, with axes, ticks, labels and a legend.
//
// It is hand-written on the standard library's image and image/png (text in
// golang.org/x/image's 7x13 bitmap font) because one line chart does not justify a
// plotting library, and because the output must not depend on fonts or tools installed
// on the machine.
package plot
