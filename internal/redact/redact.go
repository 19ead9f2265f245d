// Package redact removes credentials from URLs before they are printed or stored: the
// user information of scheme://user:password@host and the values of query parameters
// that carry secrets (the signature, credential and token of a presigned S3 URL, an
// access_token, an api_key). Everything else is left byte for byte as it was, so a
// redacted command line still reads as the one typed.
//
// Every place gptkit prints or stores a URL goes through here: a failed command's
// error line (internal/cli), a manifest's source (shards.NewSource), the S3 endpoint in
// storage's messages, the downloader's logs and errors, and a training run's recorded
// configuration. The parsing is by hand (no net/url) because it must keep text that is
// not a valid URL, and parts of command lines, intact.
package redact

import "strings"

// Mask replaces what is redacted.
const Mask = "REDACTED"

// URL returns u with its credentials replaced by Mask: the user information before the
// host ("http://key:SECRET@host" becomes "http://REDACTED@host"; a schemeless
// "key:SECRET@host" too) and the values of secret-bearing query parameters. A string
// without credentials comes back unchanged.
func URL(u string) string {
	rest, prefix := u, ""
	if i := strings.Index(u, "://"); i >= 0 {
		prefix, rest = u[:i+3], u[i+3:]
	}
	authEnd := strings.IndexAny(rest, "/?#")
	if authEnd < 0 {
		authEnd = len(rest)
	}
	if at := strings.LastIndexByte(rest[:authEnd], '@'); at >= 0 {
		rest = Mask + rest[at:]
		authEnd += len(Mask) - at
	}
	q := strings.IndexByte(rest[authEnd:], '?')
	if q < 0 {
		return prefix + rest
	}
	q += authEnd
	end := strings.IndexByte(rest[q:], '#')
	if end < 0 {
		end = len(rest)
	} else {
		end += q
	}
	return prefix + rest[:q+1] + query(rest[q+1:end]) + rest[end:]
}

// query redacts the values of secret-bearing parameters of a query string.
func query(q string) string {
	params := strings.Split(q, "&")
	changed := false
	for i, p := range params {
		k, v, ok := strings.Cut(p, "=")
		if ok && v != "" && v != Mask && secretParam(k) {
			params[i] = k + "=" + Mask
			changed = true
		}
	}
	if !changed {
		return q
	}
	return strings.Join(params, "&")
}

// secretParam reports whether a query parameter's value is a secret: X-Amz-Signature,
// X-Amz-Credential, X-Amz-Security-Token, Signature, sig, token, access_token, api_key,
// AWSAccessKeyId, password, secret and the like.
func secretParam(k string) bool {
	k = strings.ToLower(k)
	if k == "sig" || k == "key" {
		return true
	}
	for _, s := range []string{"signature", "credential", "token", "secret", "password", "passwd", "auth", "apikey", "api_key", "accesskey", "access_key"} {
		if strings.Contains(k, s) {
			return true
		}
	}
	return false
}

// String redacts every URL (a run of characters around "://", up to white space or a
// quote) in s: a command line, an error message, a log line.
func String(s string) string {
	var b strings.Builder
	done := 0 // s[:done] is copied to b
	for from := 0; ; {
		i := strings.Index(s[from:], "://")
		if i < 0 {
			break
		}
		i += from
		start := i
		for start > done && isSchemeByte(s[start-1]) {
			start--
		}
		end := i + 3
		for end < len(s) && !isDelim(s[end]) {
			end++
		}
		if start < i { // a scheme: a URL
			if r := URL(s[start:end]); r != s[start:end] {
				b.WriteString(s[done:start])
				b.WriteString(r)
				done = end
			}
		}
		from = end
	}
	if done == 0 {
		return s
	}
	b.WriteString(s[done:])
	return b.String()
}

func isSchemeByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '+' || c == '-' || c == '.'
}

func isDelim(c byte) bool {
	switch c {
	case ' ', '\t', '\n', '\r', '"', '\'', '`', '<', '>', '\\':
		return true
	}
	return false
}

// Args returns args with every URL in them redacted (a copy; args is not changed).
func Args(args []string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = String(a)
	}
	return out
}
