package main

import (
	"fmt"

	"gptkit/kernels"
	"gptkit/kernels/cpu"
	"gptkit/kernels/ref"
)

// openBackend returns the kernels for --device: auto and cpu are the CPU backend on
// threads goroutines (0: one per CPU); ref is the reference backend (slow; for
// checking); cuda is refused until the CUDA backend exists.
func openBackend(device string, threads int) (kernels.Backend, error) {
	switch device {
	case "auto", "cpu":
		return cpu.New(threads), nil
	case "ref":
		return ref.New(), nil
	case "cuda":
		return nil, fmt.Errorf("--device cuda: the CUDA backend is not there yet (it is a later issue); use --device cpu (or auto)")
	}
	return nil, fmt.Errorf("--device %q: want auto, cpu or cuda", device)
}
