package storage

import (
	"errors"
	"strings"
	"testing"
)

func TestCheckKey(t *testing.T) {
	for _, c := range []struct {
		key string
		ok  bool
	}{
		{"a", true},
		{"enron/manifest.json", true},
		{".hidden/x", true},
		{"a..b/c.d", true},
		{"x.tmp-12", true},   // not a temp name: no leading dot
		{".x.tmp-", true},    // no random suffix
		{".x.tmp-12g", true}, // suffix not hex
		{"a/.gptkit.lockx", true},
		{strings.Repeat("k", 1024), true},
		{"", false},
		{"/a", false},
		{"a/", false},
		{"a//b", false},
		{".", false},
		{"a/./b", false},
		{"..", false},
		{"a/..", false},
		{"a\x00b", false},
		{".x.tmp-0a1b", false},
		{"d/.gptkit.lock", false},
		{strings.Repeat("k", 1025), false},
	} {
		err := CheckKey(c.key)
		if (err == nil) != c.ok {
			t.Errorf("CheckKey(%q) = %v, want ok=%v", c.key, err, c.ok)
		}
		if err != nil && !errors.Is(err, ErrInvalidKey) {
			t.Errorf("CheckKey(%q) = %v, does not match ErrInvalidKey", c.key, err)
		}
	}
}

func TestCheckPrefix(t *testing.T) {
	for _, c := range []struct {
		prefix string
		ok     bool
	}{
		{"", true}, {"a", true}, {"a/", true}, {"a/b", true}, {"a/.", true}, {"a/..", true},
		{"/", false}, {"/a", false}, {"a//", false}, {"../a", false}, {"./", false},
	} {
		if err := checkPrefix(c.prefix); (err == nil) != c.ok {
			t.Errorf("checkPrefix(%q) = %v, want ok=%v", c.prefix, err, c.ok)
		}
	}
}
