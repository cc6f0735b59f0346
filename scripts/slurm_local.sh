#!/usr/bin/env bash
# A single-node Slurm cluster on this machine, for trying the cluster profile without a cluster:
#
#   bash scripts/slurm_local.sh          # install (Debian's slurm-wlm + munge), configure, start; wait for idle
#   eval "$(bash scripts/slurm_local.sh env)"   # point sinfo/sbatch/sacct at it (sets SLURM_CONF)
#   bash scripts/slurm_local.sh status   # exit 0 when the node is up, 1 otherwise
#   bash scripts/slurm_local.sh stop     # stop the daemons this script started
#
# Everything lives under $SLURM_LOCAL_DIR (default /var/lib/unlearning-slurm): slurm.conf, a munge key and
# socket of its own, state, spool and logs. No system service is touched; the daemons listen on ports of their
# own (6827, 6828), so a system munge keeps running. One file outside: where /etc/slurm/slurm.conf does not
# exist, it becomes a symlink to this slurm.conf while the cluster runs (`stop` removes it), because Slurm
# commands inside jobs find their configuration there: the Snakemake job step drops SLURM_CONF before it
# calls srun. Where /etc/slurm/slurm.conf is another cluster's, `start` refuses (use that cluster instead).
# Re-running `start` while the cluster is up does nothing; starting it after a stop (or a reboot) begins with no
# jobs: the jobs the previous controller held are dropped. Needs root (the daemons run as root) and, the
# first time, apt-get.
#
# The node is this host with its real CPUs and memory (`slurmd -C`), NVIDIA GPUs as gres when nvidia-smi
# lists some, in one partition "main" (the default partition, the one the profile submits to when it names
# none). Accounting: no slurmdbd; `sacct` answers from slurmctld, which keeps finished jobs for a day
# (MinJobAge), and every finished job is also appended to log/jobcomp.txt (`sacct --completion` reads it).
set -euo pipefail

DIR=${SLURM_LOCAL_DIR:-/var/lib/unlearning-slurm}
PARTITION=${SLURM_LOCAL_PARTITION:-main}
CTLD_PORT=${SLURM_LOCAL_CTLD_PORT:-6827}
SLURMD_PORT=${SLURM_LOCAL_SLURMD_PORT:-6828}
CONF=$DIR/etc/slurm.conf
LINK=/etc/slurm/slurm.conf
SOCKET=$DIR/munge/munge.socket
NODE=$(hostname -s)
export SLURM_CONF=$CONF

die() { echo "slurm_local.sh: $*" >&2; exit 1; }

alive() {  # alive PIDFILE: the process named in the pid file runs
    [[ -s $1 ]] && [[ -d /proc/$(cat "$1") ]]  # readable by any user, unlike kill -0
}

node_state() {
    sinfo -h -N -n "$NODE" -o %t 2>/dev/null | head -1 || true
}

is_up() {
    alive "$DIR/run/munged.pid" && alive "$DIR/run/slurmctld.pid" && alive "$DIR/run/slurmd.pid" \
        && [[ $(node_state) =~ ^(idle|mix|alloc|comp) ]]
}

install_packages() {
    command -v slurmctld >/dev/null && command -v slurmd >/dev/null && command -v sbatch >/dev/null \
        && command -v munged >/dev/null && return 0
    command -v apt-get >/dev/null || die "Slurm is not installed and apt-get is not available to install it"
    echo "installing slurm-wlm and munge with apt-get"
    export DEBIAN_FRONTEND=noninteractive
    apt-get install -y -q --no-install-recommends slurm-wlm munge >/dev/null \
        || { apt-get update -q >/dev/null && apt-get install -y -q --no-install-recommends slurm-wlm munge >/dev/null; } \
        || die "apt-get could not install slurm-wlm and munge"
}

write_config() {
    local hw gres_line="" gpus
    hw=$(slurmd -C | head -1 | sed "s/^NodeName=[^ ]*//")  # CPUs, sockets, cores, threads, RealMemory
    gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)
    if [[ ${gpus:-0} -gt 0 ]]; then
        gres_line="Gres=gpu:$gpus"
        printf 'AutoDetect=off\nName=gpu File=/dev/nvidia[0-%d]\n' "$((gpus - 1))" > "$DIR/etc/gres.conf"
    else
        rm -f "$DIR/etc/gres.conf"
    fi
    cat > "$CONF.tmp" <<EOF
# Written by scripts/slurm_local.sh: a single-node cluster on $NODE. Regenerated at each start.
ClusterName=unlearning-local
SlurmctldHost=$NODE(127.0.0.1)
SlurmctldPort=$CTLD_PORT
SlurmdPort=$SLURMD_PORT
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$SOCKET
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$DIR/state
SlurmdSpoolDir=$DIR/spool
SlurmctldPidFile=$DIR/run/slurmctld.pid
SlurmdPidFile=$DIR/run/slurmd.pid
SlurmctldLogFile=$DIR/log/slurmctld.log
SlurmdLogFile=$DIR/log/slurmd.log
PlugStackConfig=$DIR/etc/plugstack.conf
# No cgroups: works in containers and VMs; processes are tracked through /proc.
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/filetxt
JobCompLoc=$DIR/log/jobcomp.txt
MinJobAge=86400
MpiDefault=none
MailProg=/bin/true
ReturnToService=2
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
DefMemPerCPU=1000
GresTypes=gpu
NodeName=$NODE NodeAddr=127.0.0.1 $hw $gres_line State=UNKNOWN
PartitionName=$PARTITION Nodes=$NODE Default=YES MaxTime=INFINITE State=UP
EOF
    : > "$DIR/etc/plugstack.conf"
    mv "$CONF.tmp" "$CONF"
}

start_munge() {
    alive "$DIR/run/munged.pid" && return 0
    if [[ ! -s $DIR/munge/munge.key ]]; then
        mungekey --create --keyfile "$DIR/munge/munge.key.tmp" && mv "$DIR/munge/munge.key.tmp" "$DIR/munge/munge.key"
    fi
    chmod 600 "$DIR/munge/munge.key"
    munged --force --key-file "$DIR/munge/munge.key" --socket "$SOCKET" --pid-file "$DIR/run/munged.pid" \
        --log-file "$DIR/log/munged.log" --seed-file "$DIR/munge/munged.seed" 9>&- \
        || die "munged did not start; see $DIR/log/munged.log"
}

wait_for() {  # wait_for SECONDS WHAT COMMAND...: poll COMMAND once a second
    local seconds=$1 what=$2
    shift 2
    for _ in $(seq "$seconds"); do
        "$@" && return 0
        sleep 1
    done
    return 1
}

node_ready() { [[ $(node_state) =~ ^(idle|mix|alloc|comp) ]]; }

node_resume() {
    case $(node_state) in
        down* | drain* | drng* | fail*) scontrol update NodeName="$NODE" State=RESUME >/dev/null 2>&1 || true ;;
    esac
    node_ready
}

ours() {  # the default slurm.conf is the symlink to ours
    [[ -L $LINK && $(readlink "$LINK") == "$CONF" ]]
}

start() {
    [[ $(id -u) -eq 0 ]] || die "must run as root (the Slurm and munge daemons run as root here)"
    if [[ -e $LINK ]] && ! ours; then
        die "$LINK exists and is not this script's: this host has a Slurm configuration already; use that cluster"
    fi
    install_packages
    mkdir -p "$DIR"
    exec 9>"$DIR/lock"
    flock 9  # one start at a time (the daemons do not inherit fd 9)
    mkdir -p "$(dirname "$LINK")"
    ours || ln -s "$CONF" "$LINK"
    if is_up; then
        echo "slurm: already up (node $NODE $(node_state), partition $PARTITION); export SLURM_CONF=$CONF"
        return 0
    fi
    mkdir -p "$DIR"/{etc,munge,state,spool,run,log}
    chmod 755 "$DIR/munge"  # the socket is for every local user; the key stays 0600
    alive "$DIR/run/slurmctld.pid" || write_config  # a running controller keeps the config it read
    start_munge
    # -c: a controller started here begins without the saved jobs, which belonged to daemons that are gone (a
    # reboot, a killed session); slurmctld would keep them "running" and their CPUs allocated, so new jobs would pend
    alive "$DIR/run/slurmctld.pid" || slurmctld -c -f "$CONF" 9>&- || die "slurmctld did not start; see $DIR/log/slurmctld.log"
    wait_for 30 "slurmctld" scontrol ping >/dev/null || die "slurmctld does not answer; see $DIR/log/slurmctld.log"
    alive "$DIR/run/slurmd.pid" || slurmd -f "$CONF" -N "$NODE" 9>&- || die "slurmd did not start; see $DIR/log/slurmd.log"
    if ! wait_for 60 "node" node_resume; then
        sinfo -N -l >&2 || true
        tail -5 "$DIR/log/slurmd.log" "$DIR/log/slurmctld.log" >&2 || true
        die "node $NODE did not become idle within 60 s (state: $(node_state))"
    fi
    echo "slurm: up (node $NODE $(node_state), partition $PARTITION); export SLURM_CONF=$CONF"
}

stop_one() {  # stop_one NAME: TERM the daemon from its pid file, wait for it to exit
    local pidfile=$DIR/run/$1.pid pid
    alive "$pidfile" || { rm -f "$pidfile"; return 0; }
    pid=$(cat "$pidfile")
    kill "$pid"
    wait_for 30 "$1" bash -c "! kill -0 $pid 2>/dev/null" || kill -9 "$pid" 2>/dev/null || true
    rm -f "$pidfile"
}

stop() {
    [[ -d $DIR/run ]] || { echo "slurm: not running (no $DIR/run)"; return 0; }
    stop_one slurmd
    stop_one slurmctld
    stop_one munged
    if ours; then rm -f "$LINK"; fi
    echo "slurm: stopped"
}

case ${1:-start} in
    start) start ;;
    stop) stop ;;
    status) if is_up; then echo "slurm: up (node $NODE $(node_state))"; else echo "slurm: down"; exit 1; fi ;;
    env) echo "export SLURM_CONF=$CONF" ;;
    *) die "unknown command '$1' (valid: start, stop, status, env)" ;;
esac
