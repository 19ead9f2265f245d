package cuda

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

// The simulated machine's GPUs have UUIDs and bus ids, the same in every
// process of one host, and CUDA_VISIBLE_DEVICES (SimOptions.VisibleDevices)
// picks and orders them as the driver does.
func TestSimDevices(t *testing.T) {
	vis := func(s string) *string { return &s }
	all, err := Devices(Options{Sim: &SimOptions{GPUs: 4, Host: "node7"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 4 {
		t.Fatalf("%d GPUs, want 4", len(all))
	}
	seen := map[string]bool{}
	for i, g := range all {
		if !strings.HasPrefix(g.UUID, "GPU-") || len(g.UUID) != 40 || seen[g.UUID] || g.BusID == "" || g.Ordinal != i {
			t.Errorf("GPU %d: %+v", i, g)
		}
		seen[g.UUID] = true
	}
	again, _ := Devices(Options{Sim: &SimOptions{GPUs: 4, Host: "node7"}})
	other, _ := Devices(Options{Sim: &SimOptions{GPUs: 4, Host: "node8"}})
	if again[2].UUID != all[2].UUID || other[2].UUID == all[2].UUID {
		t.Errorf("UUIDs: the same host %s and %s, another host %s", all[2].UUID, again[2].UUID, other[2].UUID)
	}
	for _, tc := range []struct {
		visible string
		want    []int // the machine's indices, in ordinal order
	}{
		{"2,0", []int{2, 0}},
		{"3", []int{3}},
		{"1,7,2", []int{1}}, // the list ends at an index that is no GPU
		{"1,1,2", []int{1}}, // ... or names one twice
		{all[3].UUID + ",0", []int{3, 0}},
		{all[2].UUID[4:12], []int{2}}, // a prefix, without "GPU-"
		{"", nil},
	} {
		got, err := Devices(Options{Sim: &SimOptions{GPUs: 4, Host: "node7", VisibleDevices: vis(tc.visible)}})
		if len(tc.want) == 0 {
			if !errors.Is(err, ErrNoDevice) {
				t.Errorf("CUDA_VISIBLE_DEVICES=%q: %v, want no device", tc.visible, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("CUDA_VISIBLE_DEVICES=%q: %v", tc.visible, err)
			continue
		}
		var idx []int
		for _, g := range got {
			for i, a := range all {
				if a.UUID == g.UUID {
					idx = append(idx, i)
				}
			}
		}
		if len(idx) != len(tc.want) || len(idx) > 0 && !slices.Equal(idx, tc.want) {
			t.Errorf("CUDA_VISIBLE_DEVICES=%q: GPUs %v, want %v", tc.visible, idx, tc.want)
		}
	}
	if n, err := DeviceCount(Options{Sim: &SimOptions{GPUs: 4, VisibleDevices: vis("2,0")}}); n != 2 || err != nil {
		t.Errorf("DeviceCount with CUDA_VISIBLE_DEVICES=2,0: %d %v", n, err)
	}
	if _, err := DeviceCount(Options{Sim: &SimOptions{GPUs: 4, VisibleDevices: vis("")}}); !errors.Is(err, ErrNoDevice) {
		t.Errorf("DeviceCount with CUDA_VISIBLE_DEVICES empty: %v", err)
	}
	// Open takes an ordinal among the visible ones.
	b, err := Open(Options{Device: 1, Precision: FP32, Sim: &SimOptions{GPUs: 4, Host: "node7", VisibleDevices: vis("3,1"), Memory: 1 << 30}})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if b.Info().UUID != all[1].UUID {
		t.Errorf("ordinal 1 of CUDA_VISIBLE_DEVICES=3,1 is %s, want GPU 1's %s", b.Info().UUID, all[1].UUID)
	}
	if _, err := Open(Options{Device: 2, Sim: &SimOptions{GPUs: 4, VisibleDevices: vis("3,1")}}); !errors.Is(err, ErrNoDevice) {
		t.Errorf("ordinal 2 of two visible: %v", err)
	}
}

// FuzzSimVisibleDevices: any CUDA_VISIBLE_DEVICES gives a list of distinct GPUs
// of the machine, in the order named, never a panic.
func FuzzSimVisibleDevices(f *testing.F) {
	for _, s := range []string{"", "0", "3,2,1,0", "1,1", "GPU-", "GPU-1", "-1", "0,,1", " 2 , 1", "9999999999999999999"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		gpus := simDevices(SimOptions{GPUs: 4, Host: "fuzz", VisibleDevices: &s})
		if len(gpus) > 4 {
			t.Fatalf("%q: %d GPUs of 4", s, len(gpus))
		}
		seen := map[int]bool{}
		for _, g := range gpus {
			if g.index < 0 || g.index >= 4 || seen[g.index] {
				t.Fatalf("%q: GPUs %+v", s, gpus)
			}
			seen[g.index] = true
		}
	})
}
