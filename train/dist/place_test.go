package dist

import (
	"slices"
	"strings"
	"testing"
)

func envFunc(kv ...string) func(string) string {
	m := map[string]string{}
	for i := 0; i < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return func(k string) string { return m[k] }
}

func TestDetect(t *testing.T) {
	for _, tc := range []struct {
		name  string
		env   func(string) string
		want  Place
		found bool
		err   string
	}{
		{"single", envFunc(), Place{World: 1, LocalWorld: 1}, false, ""},
		{"torchrun", envFunc("RANK", "3", "WORLD_SIZE", "4", "LOCAL_RANK", "1", "LOCAL_WORLD_SIZE", "2", "MASTER_ADDR", "10.0.0.1", "MASTER_PORT", "1234", "GROUP_RANK", "1"),
			Place{Rank: 3, World: 4, LocalRank: 1, LocalWorld: 2, NodeRank: 1, MasterAddr: "10.0.0.1", MasterPort: 1234, Source: "torchrun"}, true, ""},
		{"torchrun rank 0 hosts", envFunc("RANK", "0", "WORLD_SIZE", "2", "MASTER_ADDR", "h", "MASTER_PORT", "1234"),
			Place{Rank: 0, World: 2, LocalRank: 0, LocalWorld: 2, MasterAddr: "h", MasterPort: 1234, Source: "torchrun", HostStore: true}, true, ""},
		{"pytorch torchrun's store", envFunc("RANK", "0", "WORLD_SIZE", "2", "MASTER_ADDR", "h", "MASTER_PORT", "1234", "TORCHELASTIC_USE_AGENT_STORE", "True", "TORCHELASTIC_RUN_ID", "x"),
			Place{Rank: 0, World: 2, LocalRank: 0, LocalWorld: 2, MasterAddr: "h", MasterPort: 1235, Source: "torchrun", HostStore: true, JobID: "x"}, true, ""},
		{"launcher", envFunc("RANK", "1", "WORLD_SIZE", "2", "MASTER_ADDR", "h", "MASTER_PORT", "1234", EnvLauncherStore, "1", "TORCHELASTIC_RESTART_COUNT", "2"),
			Place{Rank: 1, World: 2, LocalRank: 1, LocalWorld: 2, MasterAddr: "h", MasterPort: 1234, Source: "launcher", StoreHostedByLauncher: true, RestartCount: 2}, true, ""},
		{"slurm", envFunc("SLURM_PROCID", "5", "SLURM_STEP_ID", "0", "SLURM_NTASKS", "8", "SLURM_LOCALID", "1", "SLURM_NODEID", "2", "SLURM_JOB_ID", "1234",
			"SLURM_STEP_NODELIST", "gpu[07-10]", "SLURM_STEP_TASKS_PER_NODE", "2(x4)"),
			Place{Rank: 5, World: 8, LocalRank: 1, LocalWorld: 2, NodeRank: 2, MasterAddr: "gpu07", MasterPort: DefaultMasterPort + 1234, Source: "slurm", JobID: "1234"}, true, ""},
		{"slurm step world", envFunc("SLURM_PROCID", "0", "SLURM_STEP_ID", "0", "SLURM_NTASKS", "8", "SLURM_STEP_NUM_TASKS", "2", "SLURM_NODELIST", "n1", "MASTER_PORT", "4000"),
			Place{Rank: 0, World: 2, LocalWorld: 1, MasterAddr: "n1", MasterPort: 4000, Source: "slurm", HostStore: true}, true, ""},
		{"slurm batch script", envFunc("SLURM_PROCID", "0", "SLURM_NTASKS", "4", "SLURM_NODELIST", "n1"), Place{World: 1, LocalWorld: 1}, false, ""},
		{"bad rank", envFunc("RANK", "4", "WORLD_SIZE", "4", "MASTER_ADDR", "h"), Place{}, false,
			`dist: rank 4 is not in [0,4), read from torchrun's environment (RANK="4" WORLD_SIZE="4" MASTER_ADDR="h"): fix or unset them`},
		// The variables a value came from are named (the error said "master port
		// 70000 is not in [1,65535]", naming neither MASTER_PORT nor where it was set).
		{"bad port", envFunc("RANK", "0", "WORLD_SIZE", "2", "MASTER_PORT", "70000"), Place{}, false,
			`dist: master port 70000 is not in [1,65535], read from torchrun's environment (RANK="0" WORLD_SIZE="2" MASTER_PORT="70000"): fix or unset them`},
		{"slurm bad port", envFunc("SLURM_PROCID", "0", "SLURM_STEP_ID", "0", "SLURM_NTASKS", "2", "SLURM_NODELIST", "n1", "MASTER_PORT", "99999"), Place{}, false,
			`dist: master port 99999 is not in [1,65535], read from SLURM's environment (SLURM_PROCID="0" SLURM_NTASKS="2" MASTER_PORT="99999"): fix or unset them`},
		{"openmpi bad port", envFunc("OMPI_COMM_WORLD_RANK", "1", "OMPI_COMM_WORLD_SIZE", "2", "OMPI_COMM_WORLD_LOCAL_SIZE", "2", "MASTER_PORT", "0"), Place{}, false,
			`dist: master port 0 is not in [1,65535], read from Open MPI's environment (OMPI_COMM_WORLD_RANK="1" OMPI_COMM_WORLD_SIZE="2" MASTER_PORT="0"): fix or unset them`},
		{"not a number", envFunc("RANK", "x", "WORLD_SIZE", "4"), Place{}, false, "RANK"},
		{"bad node list", envFunc("SLURM_PROCID", "0", "SLURM_STEP_ID", "0", "SLURM_NTASKS", "2", "SLURM_NODELIST", "n[1-"), Place{}, false, "node list"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, found, err := Detect(tc.env)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || found != tc.found || got != tc.want {
				t.Fatalf("got %+v found %v err %v\nwant %+v found %v", got, found, err, tc.want, tc.found)
			}
		})
	}
}

func TestParseNodeList(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{"localhost", []string{"localhost"}},
		{"node[01-03,7],gpu5", []string{"node01", "node02", "node03", "node7", "gpu5"}},
		{"a[1-2]-b[1-2]", []string{"a1-b1", "a1-b2", "a2-b1", "a2-b2"}},
		{"n[9-11]", []string{"n9", "n10", "n11"}},
		{"n[098-100]", []string{"n098", "n099", "n100"}},
		{"10.0.0.[1-2]", []string{"10.0.0.1", "10.0.0.2"}},
	} {
		got, err := ParseNodeList(tc.in)
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("%q: %q %v, want %q", tc.in, got, err, tc.want)
		}
	}
	for _, bad := range []string{"n[1-", "n]", "n[a-b]", "n[3-1]", "a,,b", "n[1-99999999]", "n[]"} {
		if got, err := ParseNodeList(bad); err == nil {
			t.Errorf("%q: %q, want an error", bad, got)
		}
	}
}

func TestParseTasksPerNode(t *testing.T) {
	got, err := ParseTasksPerNode("2(x3),1")
	if err != nil || !slices.Equal(got, []int{2, 2, 2, 1}) {
		t.Errorf("got %v %v", got, err)
	}
	for _, bad := range []string{"", "x", "2(x)", "2(3)", "-1", "2(x0)"} {
		if _, err := ParseTasksPerNode(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

func TestToken(t *testing.T) {
	p := Place{Source: "slurm", JobID: "7", MasterAddr: "h", MasterPort: 1}
	if tok, derived := Token(envFunc(EnvToken, "secret"), p); tok != "secret" || derived {
		t.Errorf("env token: %q %v", tok, derived)
	}
	a, derived := Token(envFunc(), p)
	p.JobID = "8"
	b, _ := Token(envFunc(), p)
	if !derived || a == b || !strings.HasPrefix(a, "derived-") {
		t.Errorf("derived tokens %q %q (%v)", a, b, derived)
	}
	if NewToken() == NewToken() || len(NewToken()) != 32 {
		t.Error("NewToken")
	}
}

// FuzzParseNodeList: never panics, never returns more than maxNodes hosts, and
// a list of plain names comes back as it went in.
func FuzzParseNodeList(f *testing.F) {
	for _, s := range []string{"node[01-03,7],gpu5", "a[1-2]-b[1-2]", "x", "n[1-", "[", "]", "a,b", "n[0-99999]", "n[1-2][3-4]"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		hosts, err := ParseNodeList(s)
		if err != nil {
			return
		}
		if len(hosts) > maxNodes {
			t.Fatalf("%q: %d hosts", s, len(hosts))
		}
		// Without brackets or ASCII white space, the list reads back as it was, less the
		// white space (Unicode's: U+0085, U+00A0, ...) that ParseNodeList trims at its ends.
		if !strings.ContainsAny(s, "[] \t\n\r\v\f") && strings.Join(hosts, ",") != strings.TrimSpace(s) {
			t.Fatalf("%q: %q", s, hosts)
		}
	})
}

// FuzzParseTasksPerNode: never panics; what it accepts reads back.
func FuzzParseTasksPerNode(f *testing.F) {
	for _, s := range []string{"2(x3),1", "1", "4(x2)", "", "(x", "2(x99999999)"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		counts, err := ParseTasksPerNode(s)
		if err == nil && (len(counts) == 0 || len(counts) > maxNodes) {
			t.Fatalf("%q: %d counts", s, len(counts))
		}
	})
}

// FuzzParseMessage: a store message line never panics the parser, and what it
// accepts has a type and survives a round trip.
func FuzzParseMessage(f *testing.F) {
	for _, s := range []string{`{"type":"hello","token":"t","role":"worker","rank":1,"world":2,"addr":"1.2.3.4:5","gen":0,"version":1}`,
		`{"type":"start","gen":1,"addrs":["a:1","b:2"]}`, `{"type":"hb","seq":3,"in":true}`, `{}`, `{"type":1}`, `[]`, `{"type":"x","bogus":1}`, "{\"type\":\"a\"} {}"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		m, err := parseMessage(line)
		if err != nil {
			return
		}
		if m.Type == "" {
			t.Fatalf("%q: no type", line)
		}
		var buf strings.Builder
		w := &msgWriter{w: &buf}
		if err := w.write(m); err != nil {
			t.Fatal(err)
		}
		back, err := parseMessage([]byte(buf.String()))
		if err != nil || back.Type != m.Type || back.Rank != m.Rank || back.Reason != m.Reason {
			t.Fatalf("%q: round trip %+v -> %+v (%v)", line, m, back, err)
		}
	})
}
