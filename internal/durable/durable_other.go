//go:build !unix

package durable

import "errors"

// Directories are not synced here (Windows cannot open one for writing).
const supported = false

var (
	errInvalid = errors.New("invalid")
	errNoSys   = errors.New("not implemented")
)
