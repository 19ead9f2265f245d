package fetch

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestRemoteSize(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/file" {
			http.NotFound(w, r)
			return
		}
		if r.Method != http.MethodHead {
			t.Errorf("method %s, want HEAD", r.Method)
		}
		w.Header().Set("Content-Length", "12345")
	}))
	defer srv.Close()
	if n, err := RemoteSize(context.Background(), nil, srv.URL+"/file"); err != nil || n != 12345 {
		t.Errorf("RemoteSize = %d, %v; want 12345", n, err)
	}
	if _, err := RemoteSize(context.Background(), nil, srv.URL+"/missing"); !errors.Is(err, ErrNotFound) {
		t.Errorf("missing file: %v, want ErrNotFound", err)
	}
}
