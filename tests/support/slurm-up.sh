#!/bin/bash
# A throwaway one-node Slurm for the integration tests (modelled on shared/notes/CLUSTER.md):
# `slurm-up.sh up STATE CTLD_PORT SLURMD_PORT` writes STATE/slurm.conf (point SLURM_CONF at it),
# starts munged (unless one already answers), slurmctld and slurmd with every state file, log
# and pid under STATE, and 2 fake GPUs (symlinks to char devices under STATE/dev), then waits
# until the node is idle. Partitions: `debug` (default, no time limit) and `short` (1 minute).
# `slurm-up.sh up STATE CTLD_PORT SLURMD_PORT DB_PORT DBD_PORT` also starts accounting: a MariaDB
# of its own (data dir, socket and port under STATE) and slurmdbd, so sacct has job records.
# `slurm-up.sh down STATE` stops what `up` started, by pid.
# Needs root and the Debian slurm-wlm/munge packages (and slurmdbd, mariadb-server for
# accounting); exits non-zero with the reason otherwise.
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
  for d in slurmd slurmctld slurmdbd mariadb munged; do
    [ -s "$STATE/$d.pid" ] && kill "$(cat "$STATE/$d.pid")" 2>/dev/null || true
  done
  exit 0
fi

CTLD_PORT=${3:?slurmctld port}; SLURMD_PORT=${4:?slurmd port}
DB_PORT=${5:-}; DBD_PORT=${6:-}
[ "$(id -u)" = 0 ] || { echo "not root" >&2; exit 1; }
TOOLS="munged slurmctld slurmd sbatch squeue scontrol scancel"
[ -n "$DB_PORT" ] && TOOLS="$TOOLS mariadbd mariadb-install-db mariadb-admin slurmdbd"
for tool in $TOOLS; do
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

ACCOUNTING="AccountingStorageType=accounting_storage/none"
if [ -n "$DB_PORT" ]; then
  # A database of its own, so job ids (which restart at 1) never meet an earlier cluster's.
  install -d -o mysql -g mysql "$STATE/mysql" "$STATE/mysql-run"
  mariadb-install-db --user=mysql --datadir="$STATE/mysql" --skip-test-db \
    --auth-root-authentication-method=socket >"$STATE/mariadb-install.log" 2>&1
  SOCK="$STATE/mysql-run/mysqld.sock"
  mariadbd --user=mysql --datadir="$STATE/mysql" --socket="$SOCK" --port="$DB_PORT" \
    --bind-address=127.0.0.1 --pid-file="$STATE/mysql-run/mariadbd.pid" >"$STATE/mariadb.log" 2>&1 &
  echo $! >"$STATE/mariadb.pid"
  wait_for 30 "$STATE/mariadb.pid" mariadb-admin --socket="$SOCK" ping
  mariadb --socket="$SOCK" -e "CREATE USER 'slurm'@'127.0.0.1' IDENTIFIED BY 'slurmpw';
    CREATE USER 'slurm'@'localhost' IDENTIFIED BY 'slurmpw';
    GRANT ALL ON slurm_acct_db.* TO 'slurm'@'127.0.0.1';
    GRANT ALL ON slurm_acct_db.* TO 'slurm'@'localhost';"
  cat >"$STATE/slurmdbd.conf" <<EOF
AuthType=auth/munge
DbdHost=localhost
DbdAddr=127.0.0.1
DbdPort=${DBD_PORT}
SlurmUser=root
LogFile=$STATE/slurmdbd.log
PidFile=$STATE/slurmdbd.daemon.pid
StorageType=accounting_storage/mysql
StorageHost=127.0.0.1
StoragePort=${DB_PORT}
StorageUser=slurm
StoragePass=slurmpw
StorageLoc=slurm_acct_db
EOF
  chmod 0600 "$STATE/slurmdbd.conf"
  slurmdbd -D >"$STATE/slurmdbd.out" 2>&1 &
  echo $! >"$STATE/slurmdbd.pid"
  wait_for 30 "$STATE/slurmdbd.pid" bash -c "exec 3<>/dev/tcp/127.0.0.1/$DBD_PORT"
  ACCOUNTING="AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=127.0.0.1
AccountingStoragePort=${DBD_PORT}"
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
${ACCOUNTING}
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
