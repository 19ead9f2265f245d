package sim

import (
	"encoding/binary"
	"fmt"
	"sort"
)

// Image is a module loaded on a device: its .global and .const variables
// allocated in device memory, its kernels decoded.
type Image struct {
	dev     *Device
	mod     *Module
	kernels map[string]*Kernel
	allocs  []*Alloc
}

// Load places module m on the device: it allocates and initializes the
// module's .global and .const variables and decodes every kernel. An
// instruction, type or modifier the simulator does not implement is an error
// naming the module, line and kernel.
func (d *Device) Load(m *Module) (*Image, error) {
	im := &Image{dev: d, mod: m, kernels: map[string]*Kernel{}}
	if m.AddressSize != 0 && m.AddressSize != 64 {
		return nil, fmt.Errorf("sim: %s: .address_size %d (only 64 is simulated)", m.Name, m.AddressSize)
	}
	globals := map[string]symbol{}
	shared, sharedAl := 0, 1
	var extern []*VarDecl
	for _, v := range m.Vars {
		t, ok := typeOf(v.Type)
		if !ok || t.class == tcPred {
			return nil, fmt.Errorf("sim: %s:%d: variable %s of type .%s", m.Name, v.Line, v.Name, v.Type)
		}
		if _, dup := globals[v.Name]; dup {
			return nil, fmt.Errorf("sim: %s:%d: %s declared twice", m.Name, v.Line, v.Name)
		}
		size := t.size * max(v.Count, 1)
		if v.Vec > 0 {
			size *= v.Vec
		}
		al := max(v.Align, t.size, 1)
		switch v.Space {
		case "shared":
			if v.Count < 0 || v.Extern {
				extern = append(extern, v)
				sharedAl = max(sharedAl, al)
				continue
			}
			shared = alignUp(shared, al)
			globals[v.Name] = symbol{space: spShared, addr: uint64(shared), decl: v}
			shared += size
			sharedAl = max(sharedAl, al)
		case "global", "const":
			if v.Extern {
				return nil, fmt.Errorf("sim: %s:%d: .extern %s: linking modules is not simulated", m.Name, v.Line, v.Name)
			}
			if v.Count < 0 {
				return nil, fmt.Errorf("sim: %s:%d: %s has no size", m.Name, v.Line, v.Name)
			}
			a, err := d.Mem.Allocate(size, "module ."+v.Space+" "+v.Name)
			if err != nil {
				im.Unload()
				return nil, err
			}
			im.allocs = append(im.allocs, a)
			if v.Init != nil {
				if len(v.Init)*t.size > size {
					im.Unload()
					return nil, fmt.Errorf("sim: %s:%d: %s has %d initializers for %d elements", m.Name, v.Line, v.Name, len(v.Init), size/t.size)
				}
				for i, x := range v.Init {
					if v.InitFP && t.name == "f32" && x > 0xffffffff {
						x = uint64(b32(float32(f64(x)))) // a decimal literal: a double
					}
					var buf [8]byte
					binary.LittleEndian.PutUint64(buf[:], x)
					copy(a.Buf[i*t.size:], buf[:t.size])
				}
			}
			sp := spGlobal
			if v.Space == "const" {
				sp = spConst
			}
			globals[v.Name] = symbol{space: sp, addr: a.Base, decl: v}
		default:
			return nil, fmt.Errorf("sim: %s:%d: .%s variables at module scope", m.Name, v.Line, v.Space)
		}
	}
	for _, f := range m.Funcs {
		if !f.Entry || f.Body == nil {
			continue
		}
		// each kernel's own .shared variables follow the module's; the dynamic
		// area (extern .shared x[]) starts after them
		p, err := decodeKernel(m, f, withExtern(globals, extern), shared, sharedAl)
		if err != nil {
			im.Unload()
			return nil, err
		}
		if p.shared > maxSharedDefault {
			im.Unload()
			return nil, fmt.Errorf("sim: %s: kernel %s declares %d bytes of static shared memory (at most %d)", m.Name, f.Name, p.shared, maxSharedDefault)
		}
		im.kernels[f.Name] = &Kernel{dev: d, prog: p, maxDynSmem: maxSharedDefault - p.shared}
	}
	return im, nil
}

// withExtern gives the extern (dynamic) shared arrays their offset: they are
// resolved per kernel, at the end of its static shared memory; the decoder
// patches them (see fixDynamic).
func withExtern(globals map[string]symbol, extern []*VarDecl) map[string]symbol {
	if len(extern) == 0 {
		return globals
	}
	g := make(map[string]symbol, len(globals)+len(extern))
	for k, v := range globals {
		g[k] = v
	}
	for _, v := range extern {
		g[v.Name] = symbol{space: spShared, addr: dynamicMarker, decl: v}
	}
	return g
}

// dynamicMarker stands for "the start of the dynamic shared area" until the
// kernel's static size is known.
const dynamicMarker = 1 << 40

// Kernel returns the kernel called name.
func (im *Image) Kernel(name string) (*Kernel, error) {
	k, ok := im.kernels[name]
	if !ok {
		return nil, fmt.Errorf("sim: %s has no kernel %s (kernels: %v)", im.mod.Name, name, im.Kernels())
	}
	return k, nil
}

// Kernels lists the module's kernels.
func (im *Image) Kernels() []string {
	var out []string
	for k := range im.kernels {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Unload frees the module's variables.
func (im *Image) Unload() error {
	for _, a := range im.allocs {
		im.dev.Mem.Free(a.Base)
	}
	im.allocs = nil
	return nil
}
