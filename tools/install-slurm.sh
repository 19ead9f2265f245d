#!/usr/bin/env bash
# Installs what the SLURM tests need (internal/slurmtest starts a one-node cluster of its
# own in a temp directory): Debian's slurm-wlm (slurmctld, slurmd, sbatch, squeue, ...) and
# munge. About 20 s. A no-op when the binaries are already there. The tests start the
# daemons themselves, as root, and never touch a system-wide SLURM or munge setup; this
# script stops the services the packages may have started, which the tests do not use.
set -euo pipefail

have() { command -v "$1" >/dev/null 2>&1; }
if have slurmctld && have slurmd && have sbatch && have munged; then
  echo "slurm: $(slurmctld -V 2>/dev/null || echo slurmctld) and munge already installed"
  exit 0
fi
if [ "$(id -u)" != 0 ]; then
  echo "slurm: installing slurm-wlm and munge needs root (apt-get); the SLURM tests also run as root" >&2
  exit 1
fi
start=$(date +%s)
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends slurm-wlm munge >/dev/null
# Package scripts may start system daemons (no systemd here: usually they do not); the
# tests run their own.
for svc in slurmctld slurmd munge; do
  service "$svc" stop >/dev/null 2>&1 || true
done
echo "slurm: installed $(slurmctld -V) and munge in $(( $(date +%s) - start ))s"
