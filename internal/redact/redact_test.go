package redact

import (
	"strings"
	"testing"
)

func TestURL(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"http://key:SECRET@host:9000", "http://REDACTED@host:9000"},
		{"https://user@example.com/a?b=c", "https://REDACTED@example.com/a?b=c"},
		{"key:SECRET@host:9000", "REDACTED@host:9000"},
		{"http://127.0.0.1:9000", "http://127.0.0.1:9000"},
		{"s3://bucket/prefix/a@b", "s3://bucket/prefix/a@b"},
		{"https://b.s3.amazonaws.com/k?X-Amz-Credential=AKIA%2F&X-Amz-Signature=abc&x=1#f",
			"https://b.s3.amazonaws.com/k?X-Amz-Credential=REDACTED&X-Amz-Signature=REDACTED&x=1#f"},
		{"https://h/p?access_token=t0k", "https://h/p?access_token=REDACTED"},
		{"", ""},
		{"plain text", "plain text"},
	} {
		if got := URL(tc.in); got != tc.want {
			t.Errorf("URL(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestString(t *testing.T) {
	in := `tokenize run --s3-endpoint http://key:SECRET@host:9000 --output=s3://b/p --input "https://u:PW@h/x.jsonl?sig=S1G" done`
	want := `tokenize run --s3-endpoint http://REDACTED@host:9000 --output=s3://b/p --input "https://REDACTED@h/x.jsonl?sig=REDACTED" done`
	if got := String(in); got != want {
		t.Errorf("String:\n got %s\nwant %s", got, want)
	}
	if got := String("--s3-endpoint=http://k:S@h"); got != "--s3-endpoint=http://REDACTED@h" {
		t.Errorf("flag=value: %s", got)
	}
	for _, s := range []string{"no urls", "://", "a://", "x ://y@z"} {
		_ = String(s)
	}
}

// FuzzString: redaction never panics, is idempotent, leaves text without "://" alone,
// and removes the password of any URL it is given.
func FuzzString(f *testing.F) {
	for _, s := range []string{"http://key:SECRET@host", "a https://u:p@h/x?sig=1 b", "://@", "s3://b/k", "x://@@/?&=#"} {
		f.Add(s, "pw")
	}
	f.Fuzz(func(t *testing.T, s, pw string) {
		r := String(s)
		if String(r) != r {
			t.Fatalf("not idempotent: %q -> %q -> %q", s, r, String(r))
		}
		if !strings.Contains(s, "://") && r != s {
			t.Fatalf("changed text without a URL: %q -> %q", s, r)
		}
		if strings.ContainsAny(pw, "@/?#\t\n\r \"'`<>\\") {
			return
		}
		u := "http://user:" + pw + "@host/p"
		if got := String(s + " " + u); !strings.HasSuffix(got, " http://REDACTED@host/p") {
			t.Fatalf("%q: password left in %q", u, got)
		}
	})
}
