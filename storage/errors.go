package storage

import (
	"errors"
	"fmt"
	"io/fs"
)

// notExistError reports a missing object. It matches both ErrNotExist and fs.ErrNotExist,
// so callers may test either.
type notExistError struct {
	op, name string
}

func (e *notExistError) Error() string {
	return fmt.Sprintf("storage: %s %s: object does not exist (check the key and the store location)", e.op, e.name)
}

func (e *notExistError) Is(target error) bool {
	return target == ErrNotExist || target == fs.ErrNotExist
}

func notExist(op, name string) error { return &notExistError{op: op, name: name} }

// errDone is returned by a Writer used after Commit or Abort.
var errDone = errors.New("writer already committed or aborted")

// preconditionError reports a failed IfAbsent or IfMatch; it matches ErrPrecondition.
func preconditionError(name, why string) error {
	return fmt.Errorf("storage: commit %s: %w: %s", name, ErrPrecondition, why)
}

// checkWriteOptions rejects contradictory options.
func checkWriteOptions(name string, o WriteOptions) error {
	if o.IfAbsent && o.IfMatch != "" {
		return fmt.Errorf("storage: create %s: IfAbsent and IfMatch together can never both hold; pass one", name)
	}
	return nil
}
