package storage

// The S3 store keeps each object at s3://bucket/prefix/key. Writes become visible only when
// Commit issues the PutObject (small objects) or CompleteMultipartUpload (objects larger
// than PartSize); parts uploaded before that are invisible, and Abort or a failed Commit
// aborts the multipart upload. A process killed mid-upload leaves its parts on the server
// (invisible, but stored and billed) until Sweep or a bucket lifecycle rule
// (AbortIncompleteMultipartUpload) removes them.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"gptkit/internal/redact"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
	"github.com/aws/smithy-go/logging"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

type s3Store struct {
	client      *s3.Client
	bucket      string
	prefix      string // no leading or trailing "/"; may be empty
	endpoint    string // for messages and the cache identity; empty means AWS
	region      string
	partSize    int64
	concurrency int
	checksums   bool // send CRC32 part checksums (the SDK's default, unless when_required)
	log         *slog.Logger
	parts       sync.Pool // *[]byte of partSize capacity
}

func openS3(ctx context.Context, location string, opt Options) (*s3Store, error) {
	rest := strings.TrimPrefix(location, "s3://")
	bucket, prefix, _ := strings.Cut(rest, "/")
	prefix = strings.Trim(prefix, "/")
	if bucket == "" {
		return nil, fmt.Errorf("storage: open %q: no bucket (use s3://bucket/prefix)", location)
	}
	if prefix != "" {
		if err := CheckKey(prefix); err != nil {
			return nil, fmt.Errorf("storage: open %q: bad prefix: %w", location, err)
		}
	}
	partSize := opt.PartSize
	if partSize == 0 {
		partSize = DefaultPartSize
	}
	if partSize < MinPartSize {
		return nil, fmt.Errorf("storage: open %s: part size %d is below S3's minimum of 5 MiB (%d)", location, partSize, MinPartSize)
	}
	conc := opt.Concurrency
	if conc <= 0 {
		conc = defaultConcurrency
	}

	endpoint := opt.S3Endpoint
	for _, env := range []string{"AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL"} {
		if endpoint == "" {
			endpoint = os.Getenv(env)
		}
	}
	pathStyle := opt.S3PathStyle
	if endpoint != "" {
		u, err := url.Parse(endpoint)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("storage: open %s: S3 endpoint %q is not a URL like http://127.0.0.1:9000 or https://s3.example.com (check --s3-endpoint / AWS_ENDPOINT_URL_S3)", location, redact.URL(endpoint))
		}
		if u.User != nil {
			// S3 signs requests with AWS credentials; user information in the URL is
			// never sent, and never printed or stored (see internal/redact).
			opt.Logger.Warn("storage: credentials in the S3 endpoint URL are ignored: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (or AWS_PROFILE)", "endpoint", redact.URL(endpoint))
			u.User = nil
			endpoint = u.String()
		}
		host := u.Hostname()
		if net.ParseIP(host) != nil || host == "localhost" || strings.HasSuffix(host, ".localhost") {
			pathStyle = true
		}
	}

	stall, err := stallTimeout(opt)
	if err != nil {
		return nil, err
	}
	lopts := []func(*config.LoadOptions) error{config.WithHTTPClient(stallHTTPClient(stall, opt.Logger))}
	if opt.Region != "" {
		lopts = append(lopts, config.WithRegion(opt.Region))
	}
	cfg, err := config.LoadDefaultConfig(ctx, lopts...)
	if err != nil {
		return nil, fmt.Errorf("storage: open %s: load AWS configuration: %w (check AWS_PROFILE and ~/.aws/config)", location, err)
	}
	if cfg.Region == "" {
		cfg.Region = "us-east-1"
	}
	cfg.Logger = sdkLogger{opt.Logger} // the SDK's default logger prints to stderr
	client := s3.NewFromConfig(cfg, func(o *s3.Options) {
		if endpoint != "" {
			o.BaseEndpoint = aws.String(endpoint)
		}
		o.UsePathStyle = pathStyle
		if opt.HTTPClient != nil {
			o.HTTPClient = opt.HTTPClient
		}
	})
	s := &s3Store{
		client:      client,
		bucket:      bucket,
		prefix:      prefix,
		endpoint:    endpoint,
		region:      cfg.Region,
		partSize:    partSize,
		concurrency: conc,
		checksums:   cfg.RequestChecksumCalculation != aws.RequestChecksumCalculationWhenRequired,
		log:         opt.Logger,
	}
	if err := s.checkBucket(ctx); err != nil {
		return nil, err
	}
	opt.Logger.Debug("storage: opened S3 store", "location", s.String(), "endpoint", endpoint, "region", cfg.Region, "path_style", pathStyle)
	return s, nil
}

// sdkLogger sends the SDK's log lines (e.g. "Response has no supported checksum" for
// ranged GETs) to the store's logger instead of stderr.
type sdkLogger struct{ log *slog.Logger }

func (l sdkLogger) Logf(c logging.Classification, format string, v ...any) {
	level := slog.LevelDebug
	if c == logging.Warn {
		level = slog.LevelWarn
	}
	l.log.Log(context.Background(), level, "storage: aws sdk: "+fmt.Sprintf(format, v...))
}

// checkBucket makes a wrong endpoint, region or bucket fail at Open. A 403 only warns:
// credentials allowed to read and write objects may lack s3:ListBucket, which HeadBucket
// needs.
func (s *s3Store) checkBucket(ctx context.Context) error {
	_, err := s.client.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: &s.bucket})
	if err == nil {
		return nil
	}
	switch httpStatus(err) {
	case 403:
		s.log.Warn("storage: cannot check the bucket (403); continuing: credentials may be wrong or lack s3:ListBucket", "location", s.String())
		return nil
	case 404:
		return fmt.Errorf("storage: open %s: bucket %q does not exist%s (create it, or fix the location or --s3-endpoint)", s, s.bucket, s.at())
	}
	return fmt.Errorf("storage: open %s: %w%s", s, err, s.hint(err))
}

func (s *s3Store) String() string {
	if s.prefix == "" {
		return "s3://" + s.bucket
	}
	return "s3://" + s.bucket + "/" + s.prefix
}

// objectKey is the S3 key of a store key.
func (s *s3Store) objectKey(key string) string {
	if s.prefix == "" {
		return key
	}
	return s.prefix + "/" + key
}

// uri names key for messages.
func (s *s3Store) uri(key string) string { return "s3://" + s.bucket + "/" + s.objectKey(key) }

// at names the endpoint for messages.
func (s *s3Store) at() string {
	if s.endpoint == "" {
		return " at AWS (region " + s.region + ")"
	}
	return " at " + s.endpoint
}

// endpointName names the endpoint for messages.
func (s *s3Store) endpointName() string {
	if s.endpoint == "" {
		return "AWS S3 (region " + s.region + ")"
	}
	return s.endpoint
}

// cacheID identifies the store for Fetch's cache: the same bucket on another endpoint is
// another store.
func (s *s3Store) cacheID() string {
	if s.endpoint == "" {
		return s.String()
	}
	return s.String() + "@" + s.endpoint
}

func (s *s3Store) LocalPath(string) (string, bool) { return "", false }

func (s *s3Store) check(ctx context.Context, key string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := CheckKey(key); err != nil {
		return fmt.Errorf("storage: %s: %w", s, err)
	}
	if len(s.objectKey(key)) > maxKeyLen {
		return fmt.Errorf("storage: %s: %w %q: longer than %d bytes with the store's prefix", s, ErrInvalidKey, key, maxKeyLen)
	}
	return nil
}

func (s *s3Store) Stat(ctx context.Context, key string) (Info, error) {
	if err := s.check(ctx, key); err != nil {
		return Info{}, err
	}
	out, err := s.client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &s.bucket, Key: aws.String(s.objectKey(key))})
	if err != nil {
		return Info{}, s.wrap("stat", key, err)
	}
	return Info{Key: key, Size: aws.ToInt64(out.ContentLength), ModTime: aws.ToTime(out.LastModified), ETag: unquote(aws.ToString(out.ETag))}, nil
}

func (s *s3Store) List(ctx context.Context, prefix string) ([]Info, error) {
	if err := checkPrefix(prefix); err != nil {
		return nil, fmt.Errorf("storage: list %s: %w", s, err)
	}
	// S3 refuses a prefix that is not valid UTF-8 (one that ends inside a character,
	// say: the common beginning of "é..." and "è..."); keys always are, so the request
	// asks for the valid part and the answer is filtered by the whole prefix.
	asked := prefix
	for !utf8.ValidString(asked) {
		asked = asked[:len(asked)-1]
	}
	full := asked
	if s.prefix != "" {
		full = s.prefix + "/" + asked
	}
	var out []Info
	p := s3.NewListObjectsV2Paginator(s.client, &s3.ListObjectsV2Input{Bucket: &s.bucket, Prefix: &full})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("storage: list %s prefix %q: %w%s", s, prefix, err, s.hint(err))
		}
		for _, o := range page.Contents {
			k := aws.ToString(o.Key)
			if s.prefix != "" {
				k = strings.TrimPrefix(k, s.prefix+"/")
			}
			if CheckKey(k) != nil {
				s.log.Debug("storage: list skips an object whose key is not a valid store key", "key", aws.ToString(o.Key))
				continue
			}
			if !strings.HasPrefix(k, prefix) {
				continue
			}
			out = append(out, Info{Key: k, Size: aws.ToInt64(o.Size), ModTime: aws.ToTime(o.LastModified), ETag: unquote(aws.ToString(o.ETag))})
		}
	}
	slices.SortFunc(out, func(a, b Info) int { return strings.Compare(a.Key, b.Key) })
	return out, nil
}

func (s *s3Store) Delete(ctx context.Context, key string) error {
	if err := s.check(ctx, key); err != nil {
		return err
	}
	_, err := s.client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: &s.bucket, Key: aws.String(s.objectKey(key))})
	if err != nil && !isNotFound(err) {
		return s.wrap("delete", key, err)
	}
	return nil
}

// sweep aborts multipart uploads of keys starting with prefix started before cutoff.
func (s *s3Store) sweep(ctx context.Context, prefix string, cutoff time.Time) (int, error) {
	full := prefix
	if s.prefix != "" {
		full = s.prefix + "/" + prefix
	}
	in := &s3.ListMultipartUploadsInput{Bucket: &s.bucket, Prefix: &full}
	n := 0
	for {
		out, err := s.client.ListMultipartUploads(ctx, in)
		if err != nil {
			return n, fmt.Errorf("storage: sweep %s: list multipart uploads: %w%s", s, err, s.hint(err))
		}
		for _, u := range out.Uploads {
			if u.Initiated != nil && !u.Initiated.Before(cutoff) {
				continue
			}
			_, err := s.client.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{Bucket: &s.bucket, Key: u.Key, UploadId: u.UploadId})
			if err != nil && !isNoSuchUpload(err) {
				return n, fmt.Errorf("storage: sweep %s: abort upload of %s: %w%s", s, aws.ToString(u.Key), err, s.hint(err))
			}
			s.log.Debug("storage: aborted stale multipart upload", "key", aws.ToString(u.Key), "initiated", aws.ToTime(u.Initiated))
			n++
		}
		if !aws.ToBool(out.IsTruncated) {
			return n, nil
		}
		in.KeyMarker, in.UploadIdMarker = out.NextKeyMarker, out.NextUploadIdMarker
	}
}

// wrap turns an SDK error about key into a storage error: ErrNotExist, ErrPrecondition, or
// the error with a hint at the likely fix.
func (s *s3Store) wrap(op, key string, err error) error {
	switch {
	case isNotFound(err):
		return notExist(op, s.uri(key))
	case isPrecondition(err):
		return fmt.Errorf("storage: %s %s: %w", op, s.uri(key), ErrPrecondition)
	}
	return fmt.Errorf("storage: %s %s: %w%s", op, s.uri(key), err, s.hint(err))
}

// hint suggests what to check for err, or "".
func (s *s3Store) hint(err error) string {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return ""
	}
	code := apiCode(err)
	msg := err.Error()
	switch {
	case strings.Contains(msg, "credentials") ||
		code == "InvalidAccessKeyId" || code == "SignatureDoesNotMatch" || code == "InvalidToken" ||
		code == "ExpiredToken" || code == "AccessDenied" || httpStatus(err) == 403:
		return " (hint: check the credentials: AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, AWS_PROFILE or the instance role, and that they may access bucket " + s.bucket + s.at() + ")"
	case code == "NoSuchBucket":
		return " (hint: bucket " + s.bucket + " does not exist" + s.at() + ": create it, or fix the location or --s3-endpoint)"
	case code == "AuthorizationHeaderMalformed" || code == "PermanentRedirect" || code == "IllegalLocationConstraintException" || httpStatus(err) == 301:
		return " (hint: the bucket is in another region than " + s.region + ": set AWS_REGION)"
	}
	if se := (*stallError)(nil); errors.As(err, &se) {
		return " (hint: the S3 endpoint " + s.endpointName() + " stopped answering: check that the server runs and is not overloaded; $" + EnvStallTimeout + " sets how long a silent connection is given, now " + se.d.String() + ")"
	}
	var nerr net.Error
	var oerr *net.OpError
	var dnsErr *net.DNSError
	if errors.As(err, &oerr) || errors.As(err, &dnsErr) || errors.As(err, &nerr) {
		if s.endpoint == "" {
			return " (hint: cannot reach AWS S3 in region " + s.region + ": check the network, AWS_REGION, or pass --s3-endpoint for an S3-compatible server)"
		}
		return " (hint: cannot reach the S3 endpoint " + s.endpoint + ": check --s3-endpoint / AWS_ENDPOINT_URL_S3 and that the server runs)"
	}
	return ""
}

func apiCode(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	return ""
}

func httpStatus(err error) int {
	var re *smithyhttp.ResponseError
	if errors.As(err, &re) {
		return re.HTTPStatusCode()
	}
	return 0
}

func isNotFound(err error) bool {
	var nsk *types.NoSuchKey
	var nf *types.NotFound
	if errors.As(err, &nsk) || errors.As(err, &nf) {
		return true
	}
	code := apiCode(err)
	return code == "NoSuchKey" || code == "NotFound" || (httpStatus(err) == 404 && code != "NoSuchBucket" && code != "NoSuchUpload")
}

func isPrecondition(err error) bool {
	return apiCode(err) == "PreconditionFailed" || httpStatus(err) == 412
}

func isNoSuchUpload(err error) bool {
	var nsu *types.NoSuchUpload
	return errors.As(err, &nsu) || apiCode(err) == "NoSuchUpload"
}

// isConflict reports S3's 409 ConditionalRequestConflict: a concurrent conditional write
// was in flight; the request may be retried.
func isConflict(err error) bool {
	return apiCode(err) == "ConditionalRequestConflict"
}

// unquote strips the quotes S3 puts around ETags; quote restores them for If-Match.
func unquote(etag string) string { return strings.Trim(etag, `"`) }

func quote(etag string) string {
	if strings.HasPrefix(etag, `"`) || strings.HasPrefix(etag, `W/"`) || etag == "*" {
		return etag
	}
	return `"` + etag + `"`
}
