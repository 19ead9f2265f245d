package launch

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// TestForwardedEnv: the hostfile launcher gives every host NCCL's, UCX's and
// gptkit's settings on the command line (ssh passes none of the environment),
// never the job token, and they arrive word for word through a real shell.
func TestForwardedEnv(t *testing.T) {
	environ := []string{"NCCL_IB_DISABLE=1", "NCCL_SOCKET_IFNAME=eth0,eth1", "NCCL_DEBUG=INFO", "UCX_TLS=rc", "HOME=/root",
		"GPTKIT_JOB_TOKEN=secret", "GPTKIT_CUDA_PRECISION=bf16", "CUDA_VISIBLE_DEVICES=0", "NCCL_TOPO_FILE=/a b/it's.xml", "PATH=/bin"}
	got := ForwardedEnv(environ)
	want := []string{"GPTKIT_CUDA_PRECISION=bf16", "NCCL_DEBUG=INFO", "NCCL_IB_DISABLE=1", "NCCL_SOCKET_IFNAME=eth0,eth1", "NCCL_TOPO_FILE=/a b/it's.xml", "UCX_TLS=rc"}
	if !slices.Equal(got, want) {
		t.Fatalf("forwarded %q, want %q", got, want)
	}
	c := HostfileConfig{Hosts: []Host{{"n1", 2}, {"n2", 2}}, MasterPort: 29500, Dir: "/", Program: "printenv", Env: got}
	cmd := c.RemoteCommand(1)
	if strings.Contains(cmd, "secret") {
		t.Fatalf("the token is on the command line: %s", cmd)
	}
	// What the remote shell runs: printenv of the forwarded names (printenv
	// takes the launcher's flags as more names and prints nothing for them).
	cmd = strings.Replace(cmd, "exec env ", "exec env -i ", 1)
	cmd = cmd[:strings.Index(cmd, " printenv")] + " printenv NCCL_TOPO_FILE NCCL_SOCKET_IFNAME NCCL_IB_DISABLE UCX_TLS GPTKIT_CUDA_PRECISION"
	out, _ := exec.Command("sh", "-c", cmd).Output()
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if !slices.Equal(lines, []string{"/a b/it's.xml", "eth0,eth1", "1", "rc", "bf16"}) {
		t.Errorf("the remote shell saw %q (command %s)", lines, cmd)
	}
}
