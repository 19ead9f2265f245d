package cuda

import (
	"errors"
	"fmt"
	"runtime"
	"strings"

	"github.com/ebitengine/purego"
)

// errNotFound says that none of a library's names could be opened.
var errNotFound = errors.New("library not found")

// openLib dlopens the first of names that loads and returns its handle and name.
func openLib(names ...string) (uintptr, string, error) {
	// purego calls dlopen, then dlerror, whose message is the calling thread's: on
	// another thread it is another call's, or empty.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var msgs []string
	for _, n := range names {
		h, err := purego.Dlopen(n, purego.RTLD_NOW|purego.RTLD_GLOBAL)
		if err == nil {
			return h, n, nil
		}
		msgs = append(msgs, err.Error())
	}
	return 0, "", fmt.Errorf("%w: %s (%s)", errNotFound, strings.Join(names, ", "), strings.Join(msgs, "; "))
}

// binding names one C function and the Go func variable it is bound to.
type binding struct {
	fn   any // pointer to a func variable
	name string
}

// bindAll binds every function of bs in the library h (named lib in errors); a
// missing symbol is an error, not a panic.
func bindAll(h uintptr, lib string, bs []binding) error {
	runtime.LockOSThread() // dlsym's dlerror, as in openLib
	defer runtime.UnlockOSThread()
	for _, b := range bs {
		sym, err := purego.Dlsym(h, b.name)
		if err != nil {
			return fmt.Errorf("cuda: %s has no %s (too old a version?): %w", lib, b.name, err)
		}
		purego.RegisterFunc(b.fn, sym)
	}
	return nil
}
