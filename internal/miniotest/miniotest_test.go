package miniotest

import (
	"context"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/s3"
)

func TestMain(m *testing.M) { os.Exit(Main(m)) }

func TestStartAndStop(t *testing.T) {
	s := Start(t)
	bucket := s.NewBucket(t)
	if _, err := s.Client().HeadBucket(context.Background(), &s3.HeadBucketInput{Bucket: &bucket}); err != nil {
		t.Fatal(err)
	}
	env := strings.Join(s.Env(), " ")
	for _, want := range []string{"AWS_ACCESS_KEY_ID=" + s.AccessKey, "AWS_ENDPOINT_URL_S3=" + s.Endpoint, "AWS_REGION="} {
		if !strings.Contains(env, want) {
			t.Errorf("Env() = %s, lacks %s", env, want)
		}
	}
	s.Stop()
	s.Stop() // idempotent
	if resp, err := http.Get(s.Endpoint + "/minio/health/ready"); err == nil {
		resp.Body.Close()
		t.Fatal("server still answers after Stop")
	}
}

func TestSharedIsShared(t *testing.T) {
	if Shared(t) != Shared(t) {
		t.Fatal("Shared started two servers")
	}
}

func TestMissingBinarySkips(t *testing.T) {
	t.Setenv("MINIO_BIN", "/nonexistent/minio")
	t.Setenv("CI", "")
	skipped := false
	t.Run("start", func(t *testing.T) {
		defer func() { skipped = t.Skipped() }()
		Start(t)
	})
	if !skipped {
		t.Fatal("Start with no binary did not skip")
	}
}
