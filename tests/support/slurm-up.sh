#!/bin/bash
# A throwaway one-node Slurm for the integration tests (modelled on shared/notes/CLUSTER.md):
# `slurm-up.sh up STATE CTLD_PORT SLURMD_PORT` writes STATE/slurm.conf (point SLURM_CONF at it),
# starts munged (unless one already answers), slurmctld and slurmd with every state file, log
# and pid under STATE, and 2 fake GPUs (symlinks to char devices under STATE/dev), then waits
# until the node is idle. Partitions: `debug` (default, no time limit) and `short` (1 minute). `slurm-up.sh down STATE` stops what `up` started, by pid.
# Needs root and the Debian slurm-wlm/munge packages; exits non-zero with the reason otherwise.
set -euo pipefail
cmd=${1:?up or down}; STATE=${2:?state dir}

wait_for() { # wait_for SECS PIDFILE CMD...: poll CMD until it succeeds; fail if the process died
  local secs=$1 pidf=$2; shift 2; local end=$(( $(date +%s) + secs ))
  until "$@" >/dev/null 2>&1; do
    kill -0 "$(cat "$pidf")" 2>/dev/null || { echo "the process from $pidf died:" >&2; tail -5 "${pidf%.pid}.log" "${pidf%.pid}.out" >&2 2>/dev/null || true; return 1; }
    [ "$(date +%s)" -lt "$end" ] || { echo "timed out waiting for: $*" >&2; return 1; }
    sleep 0.2
  done
}

if [ "$cmd" = down ]; then
  export SLURM_CONF="$STATE/slurm.conf"
  # Jobs first, so no task outlives the daemons that would have killed it.
  if [ -s "$STATE/slurmctld.pid" ] && kill -0 "$(cat "$STATE/slurmctld.pid")" 2>/dev/null; then
    timeout 5 squeue -h -o %i | xargs -r timeout 5 scancel || true
    end=$(( $(date +%s) + 10 ))
    while [ -n "$(timeout 3 squeue -h -o %i 2>/dev/null)" ] && [ "$(date +%s)" -lt "$end" ]; do sleep 0.2; done
  fi
  for d in slurmd slurmctld munged; do
    [ -s "$STATE/$d.pid" ] && kill "$(cat "$STATE/$d.pid")" 2>/dev/null || true
  done
  exit 0
fi

CTLD_PORT=${3:?slurmctld port}; SLURMD_PORT=${4:?slurmd port}
[ "$(id -u)" = 0 ] || { echo "not root" >&2; exit 1; }
for tool in munged slurmctld slurmd sbatch squeue scontrol scancel; do
  command -v "$tool" >/dev/null || { echo "$tool is not installed" >&2; exit 1; }
done
mkdir -p "$STATE/ctld" "$STATE/spool" "$STATE/dev"
export SLURM_CONF="$STATE/slurm.conf"

if ! (munge -n | unmunge) >/dev/null 2>&1; then
  [ -s /etc/munge/munge.key ] || mungekey --create --keyfile=/etc/munge/munge.key
  install -d -o munge -g munge -m 0755 /run/munge
  setpriv --reuid=munge --regid=munge --init-groups /usr/sbin/munged --foreground >"$STATE/munged.log" 2>&1 &
  echo $! >"$STATE/munged.pid"
  wait_for 10 "$STATE/munged.pid" sh -c 'munge -n | unmunge'
fi

# Plain files are refused by slurmd; links to two distinct char devices work (index from the name).
ln -sf /dev/null "$STATE/dev/nvidia0"; ln -sf /dev/zero "$STATE/dev/nvidia1"
H=$(hostname -s)
cat >"$SLURM_CONF" <<EOF
ClusterName=gpudeck-test
SlurmctldHost=${H}(127.0.0.1)
SlurmctldPort=${CTLD_PORT}
SlurmdPort=${SLURMD_PORT}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
MpiDefault=none
MailProg=/bin/true
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
GresTypes=gpu
SchedulerType=sched/backfill
SchedulerParameters=batch_sched_delay=0
ReturnToService=2
StateSaveLocation=$STATE/ctld
SlurmdSpoolDir=$STATE/spool
SlurmctldPidFile=$STATE/slurmctld.daemon.pid
SlurmdPidFile=$STATE/slurmd.daemon.pid
SlurmctldLogFile=$STATE/slurmctld.log
SlurmdLogFile=$STATE/slurmd.log
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/filetxt
JobCompLoc=$STATE/jobcomp.log
MinJobAge=300
NodeName=${H} NodeAddr=127.0.0.1 CPUs=$(nproc) RealMemory=500 Gres=gpu:2 State=UNKNOWN
PartitionName=debug Nodes=${H} Default=YES MaxTime=INFINITE State=UP
PartitionName=short Nodes=${H} MaxTime=1 State=UP
EOF
cat >"$STATE/gres.conf" <<EOF
AutoDetect=off
Name=gpu File=$STATE/dev/nvidia[0-1]
EOF
slurmctld -D -i >"$STATE/slurmctld.out" 2>&1 &
echo $! >"$STATE/slurmctld.pid"
slurmd -D >"$STATE/slurmd.out" 2>&1 &
echo $! >"$STATE/slurmd.pid"
wait_for 30 "$STATE/slurmctld.pid" sh -c 'timeout 3 sinfo -h -o %T | grep -qx idle'
