package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRunRedactsCredentials: a password in --s3-endpoint is neither printed nor stored
// in the manifest's source.command (issue 15, item 10).
func TestRunRedactsCredentials(t *testing.T) {
	t.Setenv("AWS_ACCESS_KEY_ID", "test")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "test")
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	spec := alphabetSpec(t)
	in := filepath.Join(t.TempDir(), "in.jsonl")
	os.WriteFile(in, []byte("{\"text\": \"abc\"}\n"), 0o644)
	out := filepath.Join(t.TempDir(), "out")
	const endpoint = "http://key:Pa55w0rdXYZ@127.0.0.1:1"
	code, _, errOut := runTokenize(t, "", "run", "--input", in, "--name", "c", "--tokenizer", spec, "--append-eod=false", "--progress", "off",
		"--output", out, "--s3-endpoint", endpoint)
	if code != 0 {
		t.Fatalf("local run: %s", errOut)
	}
	m, err := os.ReadFile(filepath.Join(out, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(m), "Pa55w0rdXYZ") || !strings.Contains(string(m), "http://REDACTED@127.0.0.1:1") {
		t.Errorf("manifest.json keeps the password:\n%s", m)
	}
	code, _, errOut = runTokenize(t, "", "run", "--input", in, "--name", "c", "--tokenizer", spec, "--append-eod=false", "--progress", "off",
		"--output", "s3://bucket/x", "--s3-endpoint", "key:Pa55w0rdXYZ@127.0.0.1:1")
	if code == 0 || strings.Contains(errOut, "Pa55w0rdXYZ") {
		t.Errorf("exit %d, stderr keeps the password: %s", code, errOut)
	}
	code, _, errOut = runTokenize(t, "", "run", "--input", in, "--name", "c", "--tokenizer", spec, "--append-eod=false", "--progress", "off",
		"--output", "s3://bucket/x", "--s3-endpoint", endpoint)
	if code == 0 || strings.Contains(errOut, "Pa55w0rdXYZ") {
		t.Errorf("exit %d, stderr keeps the password: %s", code, errOut)
	}
}
