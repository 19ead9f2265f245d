package cuda

import (
	"runtime"
	"strings"
	"sync"
	"testing"
)

// TestOpenLibNamesEveryFailure: each name's dlerror is in the error. dlerror is the
// calling thread's, and a goroutine may change threads between purego's dlopen and
// dlerror calls: "--device auto" then logged "libcuda.so (; libcuda.so: cannot
// open ...)", libcuda.so.1's reason lost, about one run in ten.
func TestOpenLibNamesEveryFailure(t *testing.T) {
	if runtime.GOMAXPROCS(0) < 2 {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
	}
	const a, b = "libgptkit-test-absent-a.so.1", "libgptkit-test-absent-b.so"
	stop := make(chan struct{})
	var busy sync.WaitGroup
	for range 2 * runtime.GOMAXPROCS(0) { // goroutines that keep the scheduler moving
		busy.Add(1)
		go func() {
			defer busy.Done()
			for {
				select {
				case <-stop:
					return
				default:
					runtime.Gosched()
				}
			}
		}()
	}
	defer busy.Wait()
	defer close(stop)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var bad []string
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 1000 {
				_, _, err := openLib(a, b)
				if msg := err.Error(); !strings.Contains(msg, a+": ") || !strings.Contains(msg, b+": ") {
					mu.Lock()
					bad = append(bad, msg)
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	if len(bad) > 0 {
		t.Fatalf("%d of 4000 errors lack a name's reason; the first: %s", len(bad), bad[0])
	}
}
