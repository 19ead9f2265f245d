// Package launch starts the ranks of a data-parallel training run, as torchrun and
// DeepSpeed's launcher do for PyTorch:
//
//   - Run is one node's launcher: it starts the node's ranks as child processes
//     with torchrun's environment (RANK, WORLD_SIZE, LOCAL_RANK,
//     LOCAL_WORLD_SIZE, GROUP_RANK, MASTER_ADDR, MASTER_PORT, TORCHELASTIC_*) and
//     the job token, prefixes their stderr lines with the rank, forwards
//     signals, and when a rank fails stops the others. With restarts left it
//     starts the group again (the ranks resume from the newest checkpoint);
//     otherwise it gives the job up. Node 0's launcher hosts the rendezvous store
//     (train/dist), which lives across restarts; the other nodes' launchers
//     follow its events.
//   - RunHostfile starts one launcher per host of a DeepSpeed/GPT-NeoX hostfile
//     ("host slots=N") over ssh, as GPT-NeoX does with pdsh: the remote command
//     line is quoted word by word for the remote shell (no injection path), and
//     the job token travels on ssh's stdin, never on a command line. As ssh passes
//     no environment, NCCL's, UCX's and gptkit's variables (NCCL_*, UCX_*,
//     GPTKIT_* but the token) are set on the remote command line. Closing
//     that stdin (this process ends, or is interrupted) stops the remote
//     launcher.
//
// Hand-written: the launcher is a small supervisor over os/exec whose behaviour
// (rank-prefixed output, failure naming, restart from checkpoints) is the
// contract; no library does this for Go programs.
package launch
