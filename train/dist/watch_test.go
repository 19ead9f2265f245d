package dist

import (
	"bufio"
	"context"
	"encoding/json"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestCollectiveTimeoutOption: the collectives' deadline is its own option
// (--collective-timeout), apart from the rendezvous timeout: a rank alive but
// stuck before a collective is named once the collective deadline passes.
func TestCollectiveTimeoutOption(t *testing.T) {
	comms := startGroup(t, 3, Options{Timeout: time.Minute, CollectiveTimeout: 500 * time.Millisecond}, ServerConfig{})
	start := time.Now()
	expectFailures(t, comms, []int{0, 1}, 20*time.Second, "rank 2 did not arrive at collective #1 (all-reduce sum) within 500ms", func(c *Comm) error {
		return c.AllReduceSum(context.Background(), make([]float32, 10))
	})
	if took := time.Since(start); took > 15*time.Second {
		t.Errorf("named after %s", took)
	}
}

// TestExternalCollectiveStuck: collectives that run outside the ring (NCCL's)
// are watched the same way: the rank whose collective times out reports it,
// and the store names the rank that had not reached it, whether its host never
// began it or its GPU never started it; every rank's communicator fails.
func TestExternalCollectiveStuck(t *testing.T) {
	for _, tc := range []struct {
		name  string
		stuck func(c *Comm)
	}{
		{"host stuck before the collective", func(c *Comm) {}},
		{"GPU stuck before the collective", func(c *Comm) { c.BeginCollective() }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			comms := startGroup(t, 3, Options{Timeout: time.Minute, HeartbeatInterval: 100 * time.Millisecond}, ServerConfig{})
			for _, c := range comms[:2] {
				seq := c.BeginCollective()
				c.CollectiveStarted(seq)
			}
			tc.stuck(comms[2])
			time.Sleep(300 * time.Millisecond) // a heartbeat or two with the positions
			err := comms[0].CollectiveTimedOut(1, "nccl all-reduce", 2*time.Second)
			want := "rank 2 did not arrive at collective #1 (nccl all-reduce) within 2s"
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Fatalf("verdict %v, want %q", err, want)
			}
			for r, c := range comms {
				select {
				case <-c.Aborted():
					if !strings.Contains(c.Err().Error(), want) {
						t.Errorf("rank %d: %v", r, c.Err())
					}
				case <-time.After(10 * time.Second):
					t.Errorf("rank %d was not told", r)
				}
			}
		})
	}
}

// TestNCCLIDBehindToken: the NCCL unique id a job publishes in the store is
// given only to the job's ranks: a process without the job token is refused
// before it can ask, and one with the token that is not a rank of the running
// generation gets nothing.
func TestNCCLIDBehindToken(t *testing.T) {
	srv, port := startStore(t, 2, ServerConfig{})
	_ = srv
	comms := make([]*Comm, 2)
	errs := make([]error, 2)
	done := make(chan struct{})
	for r := range 2 {
		go func() {
			comms[r], errs[r] = Init(context.Background(), Place{Rank: r, World: 2, MasterAddr: "127.0.0.1", MasterPort: port, StoreHostedByLauncher: true},
				Options{Token: testToken, Timeout: 20 * time.Second, Logger: testLogger(t)})
			done <- struct{}{}
		}()
	}
	<-done
	<-done
	for r, err := range errs {
		if err != nil {
			t.Fatalf("rank %d: %v", r, err)
		}
		t.Cleanup(func() { comms[r].Close(nil) })
	}
	secret := []byte("the-nccl-unique-id")
	if err := comms[0].Publish(context.Background(), "nccl-unique-id", secret); err != nil {
		t.Fatal(err)
	}
	ask := func(token, role string) (answers []message, err error) {
		conn, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), 5*time.Second)
		if err != nil {
			return nil, err
		}
		defer conn.Close()
		w := &msgWriter{w: conn}
		w.write(message{Type: msgHello, Version: protocolVersion, Token: token, Role: role, Rank: 1, World: 2, Addr: "127.0.0.1:1"})
		w.write(message{Type: msgGet, Key: "nccl-unique-id"})
		conn.SetReadDeadline(time.Now().Add(time.Second))
		sc := bufio.NewScanner(conn)
		for sc.Scan() {
			var m message
			json.Unmarshal(sc.Bytes(), &m)
			answers = append(answers, m)
		}
		return answers, nil
	}
	for _, tc := range []struct{ name, token, role string }{
		{"no token", "", roleWorker},
		{"another job's token", "not-" + testToken, roleWorker},
		{"the token, as a launcher (no rank)", testToken, roleAgent},
	} {
		answers, err := ask(tc.token, tc.role)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range answers {
			if m.Type == msgValue || strings.Contains(string(m.Value), string(secret)) {
				t.Errorf("%s: got the id: %+v", tc.name, m)
			}
		}
		if tc.token != testToken && (len(answers) == 0 || answers[0].Type != msgError || !strings.Contains(answers[0].Reason, "wrong job token")) {
			t.Errorf("%s: answers %+v, want a refusal", tc.name, answers)
		}
	}
	// the job's own ranks still get it
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if v, err := comms[1].Lookup(ctx, "nccl-unique-id"); err != nil || string(v) != string(secret) {
		t.Errorf("rank 1: %q %v", v, err)
	}
}
