package launch

import "strings"

// shellQuote quotes one word for a POSIX shell: single quotes, with each ' as '\”.
// Nothing inside single quotes is special, so the remote shell sees the word as it
// is.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-./=:,+@%") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// shellCommand joins words into one command line for a POSIX shell.
func shellCommand(words []string) string {
	q := make([]string, len(words))
	for i, w := range words {
		q[i] = shellQuote(w)
	}
	return strings.Join(q, " ")
}
