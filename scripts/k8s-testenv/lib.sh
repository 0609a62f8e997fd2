# shellcheck shell=bash disable=SC2034  # (the variables are for the scripts)
# Sourced by the k8s-testenv scripts (not run on its own): where things live
# and the few helpers every script needs. See README.md beside this file.

# The folder of these scripts.
KTE_HOME=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

# The built binaries. The same folder and names as the shared k8s-testenv
# tool that these scripts replace, so a machine builds them once for both.
KTE_CACHE=${KAAS_K8S_CACHE:-/var/cache/kaas-k8s}
KTE_BIN=$KTE_CACHE/bin
KTE_BINARIES=(kube-apiserver kube-controller-manager kubectl)

# What gets built: Debian bookworm's kubernetes source package (upstream
# v1.20.2 despite the "1.20.5" in the version) with Debian's patches.
KTE_K8S_VERSION=v1.20.2
KTE_DEB_VERSION=${KAAS_K8S_DEB_VERSION:-1.20.5+really1.20.2-1.1+deb12u1}

# The fake node that pods are bound to.
KTE_NODE=kaas-node

# kte_log MSG...: progress on stderr, prefixed with the script's name.
kte_log() { printf '[k8s-testenv %s] %s\n' "${KTE_SELF:-?}" "$*" >&2; }
# kte_die MSG...: the error on stderr, exit 1.
kte_die() { printf '[k8s-testenv %s] ERROR: %s\n' "${KTE_SELF:-?}" "$*" >&2; exit 1; }

# kte_owned PID DIR: true while PID is a live (not zombie) process whose
# command line names a path inside DIR. Every server `up DIR` starts gets
# paths under DIR as arguments, so this tells ours from a reused PID.
kte_owned() {
  local pid=$1 dir=$2 state cmdline
  [ -r "/proc/$pid/stat" ] || return 1
  # the state is the first field after "(comm)", which may contain spaces
  state=$(sed 's/^.*) //' "/proc/$pid/stat" 2>/dev/null | cut -d' ' -f1) || return 1
  case "$state" in Z | X | '') return 1 ;; esac
  cmdline=$(tr '\0' '\n' 2>/dev/null <"/proc/$pid/cmdline") || return 1
  case "$cmdline" in *"$dir/"*) return 0 ;; *) return 1 ;; esac
}

# kte_pids_file DIR: print the PIDs listed in DIR/pids, one a line.
kte_pids_file() {
  [ -f "$1/pids" ] || return 0
  local pid
  while read -r pid _; do
    case "$pid" in '' | *[!0-9]*) ;; *) echo "$pid" ;; esac
  done <"$1/pids"
}
