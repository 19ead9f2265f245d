package fetch

import (
	"bytes"
	"errors"
	"fmt"
)

// RejectEmptyOrHTML is an Options.Validate for files that are never empty and never
// HTML (tokenizer files, corpora): an empty download, or an HTML page (a login,
// error or "file moved" page served with status 200), is an error rather than a file.
func RejectEmptyOrHTML(dest string, head []byte) error {
	if len(head) == 0 {
		return errors.New("the server sent an empty file")
	}
	if looksLikeHTML(head) {
		start := bytes.TrimSpace(head)
		if len(start) > 40 {
			start = start[:40]
		}
		return fmt.Errorf("the server sent an HTML page (starting %q), perhaps an error or login page, not the file", start)
	}
	return nil
}

// looksLikeHTML reports whether head starts, after a byte order mark and white space,
// with an HTML doctype or one of the tags that open an HTML page.
func looksLikeHTML(head []byte) bool {
	head = bytes.TrimPrefix(head, []byte("\xEF\xBB\xBF"))
	head = bytes.TrimLeft(head, " \t\r\n")
	for _, tag := range []string{"<!doctype html", "<html", "<head", "<body", "<!--"} {
		if len(head) >= len(tag) && bytes.EqualFold(head[:len(tag)], []byte(tag)) {
			return true
		}
	}
	return false
}
