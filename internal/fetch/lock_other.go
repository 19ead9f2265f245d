//go:build !(darwin || dragonfly || freebsd || linux || netbsd || openbsd)

package fetch

import (
	"context"
	"log/slog"
)

// lockFile does nothing where flock is missing: concurrent downloads of one file may
// then clash on its .part, but a wrong file still never gets published when its size
// or sha256 is known, since it is checked before the rename.
func lockFile(ctx context.Context, path string, log *slog.Logger) (unlock func(), err error) {
	return func() {}, nil
}
