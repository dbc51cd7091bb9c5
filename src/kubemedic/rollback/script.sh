#!/bin/sh
# kubemedic-rollback: OverlayFS with a tmpfs upper dir over some of the node's directories, so
# that a reboot throws away whatever changed in them; the kept directories are bound back from
# the disk, so changes to them persist. Rendered by `kubemedic rollback render` from the spec
# below: render it again rather than edit it.
#
# Usage: kubemedic-rollback start|stop|check [ROOT]
#   start  mount the tmpfs, the overlays, the kept directories and the binds, in that order;
#          nothing when they are active already; undoes what it mounted when a step fails
#   stop   unmount them in reverse order: for a quiesced system or a test tree (a running node
#          holds files open under /etc and /var; there, disable the unit and reboot instead)
#   check  print active, inactive or partial; exit 0, 3 or 1
# ROOT is a directory treated as / (how `kubemedic rollback verify` proves it); default /.
set -eu
set -f  # no globbing: the lists below are split on spaces and hold no pattern characters

# The spec (paths hold only letters, digits and . _ / + @ -, so spaces can separate them).
OVERLAY='@@OVERLAY@@'
KEEP='@@KEEP@@'
BINDS='@@BINDS@@'
SIZE='@@SIZE@@'

PROG=kubemedic-rollback
TAG=kubemedic-rollback # the source name of every mount made here, as mountinfo shows it

say() { printf '%s: %s\n' "$PROG" "$*"; }
die() {
  printf '%s: error: %s\n' "$PROG" "$*" >&2
  exit 1
}

action=${1:-}
root=${2:-/}
case $root in
  /*) ;;
  *) die "ROOT $root: expected an absolute path" ;;
esac
case $root in
  *[!A-Za-z0-9._/+@-]*) die "ROOT $root: only letters, digits and . _ / + @ - are allowed" ;;
esac
root=${root%/} # / becomes the empty prefix
state="$root/run/kubemedic-rollback"
tmpfs="$state/tmpfs"
lower="$state/lower"

# Whether the top mount at $1 is one of ours of type $2.
ours() {
  found=$(findmnt -rn -o FSTYPE,SOURCE --mountpoint "$1" 2>/dev/null | tail -n 1)
  [ "$found" = "$2 $TAG" ]
}

# The words of $1 in reverse order.
reverse() {
  reversed=''
  for word in $1; do reversed="$word $reversed"; done
  printf '%s' "$reversed"
}

# Where the disk has $1: beneath its overlay (the private view taken before it), or in place.
disk_path() {
  for top in $OVERLAY; do
    case $1 in "$top" | "$top"/*)
      printf '%s' "$lower$1"
      return 0
      ;;
    esac
  done
  printf '%s' "$root$1"
}

# Whether $1 is a kept directory or inside one.
kept() {
  for dir in $KEEP; do
    case $1 in "$dir" | "$dir"/*) return 0 ;; esac
  done
  return 1
}

status() {
  have=0
  want=1
  if ours "$tmpfs" tmpfs; then have=$((have + 1)); fi
  for dir in $OVERLAY; do
    want=$((want + 2))
    if ours "$root$dir" overlay; then have=$((have + 1)); fi
    if mountpoint -q -- "$lower$dir"; then have=$((have + 1)); fi
  done
  if [ "$have" -eq 0 ]; then
    echo inactive
  elif [ "$have" -eq "$want" ]; then
    echo active
  else
    echo partial
  fi
}

# A directory the disk must have before its overlay covers it (a kept directory, a bind's
# source or target): made there when missing.
on_disk() {
  if [ -L "$1" ]; then die "$1: a symbolic link where a directory is expected"; fi
  mkdir -p -- "$1"
}

# The disk's view of an overlaid directory, taken before the overlay covers it: the overlay's
# lower dir and the source of what is kept inside it. Recursive, so a file system mounted inside
# (a separate /var/lib/containerd) comes along; private, so the overlay about to be mounted on
# the original does not propagate into it.
bind_lower() {
  if [ -L "$root$1" ] || [ ! -d "$root$1" ]; then
    die "$root$1: expected a directory (not a symbolic link) to overlay"
  fi
  mkdir -p -- "$lower$1"
  mount --rbind -- "$root$1" "$lower$1"
  mount --make-rprivate -- "$lower$1"
}

# A file system mounted inside an overlaid directory and not kept is hidden by the overlay.
warn_hidden() {
  findmnt -rn -o TARGET | while IFS= read -r target; do
    case $target in "$root$1"/*)
      if ! kept "${target#"$root"}"; then
        say "warning: $target is a mount inside $1 that is not kept: the overlay hides it"
      fi
      ;;
    esac
  done
}

mount_overlay() {
  upper="$tmpfs/upper$1"
  work="$tmpfs/work$1"
  mkdir -p -- "$upper" "$work"
  chown --reference="$lower$1" -- "$upper"
  chmod --reference="$lower$1" -- "$upper"
  mount -t overlay -o "lowerdir=$lower$1,upperdir=$upper,workdir=$work" -- "$TAG" "$root$1"
  say "overlay on $root$1: its changes go to $upper and are gone at the next boot"
}

start() {
  case $(status) in
    active)
      say "already active on ${root:-/}: nothing to do"
      return 0
      ;;
    partial) die "partly set up on ${root:-/}: run '$0 stop${2:+ $root}' first" ;;
  esac
  started=1
  mkdir -p -- "$tmpfs"
  mount -t tmpfs -o "size=$SIZE,mode=0700" -- "$TAG" "$tmpfs"
  say "tmpfs for the upper dirs on $tmpfs (size=$SIZE)"
  for dir in $OVERLAY; do bind_lower "$dir"; done
  for dir in $KEEP; do on_disk "$lower$dir"; done
  for pair in $BINDS; do
    on_disk "$(disk_path "${pair%%:*}")"
    on_disk "$(disk_path "${pair#*:}")"
  done
  for dir in $OVERLAY; do
    warn_hidden "$dir"
    mount_overlay "$dir"
  done
  for dir in $KEEP; do
    mount --rbind -- "$lower$dir" "$root$dir"
    say "kept $root$dir: bound back from the disk"
  done
  for pair in $BINDS; do
    mount --rbind -- "$(disk_path "${pair%%:*}")" "$root${pair#*:}"
    say "bound ${pair%%:*} (on the disk) onto $root${pair#*:}"
  done
  # The disk's view stays, read-only: what the overlays cover, for `kubemedic rollback status`.
  for dir in $OVERLAY; do mount -o remount,bind,ro -- "$lower$dir"; done
  started=0
  say "active on ${root:-/}: a reboot discards changes to $OVERLAY except $KEEP"
}

stop() {
  if [ "$(status)" = inactive ]; then
    say "not active on ${root:-/}: nothing to do"
    return 0
  fi
  for dir in $(reverse "$OVERLAY"); do
    if ours "$root$dir" overlay; then
      umount -R -- "$root$dir"
      say "unmounted the overlay on $root$dir and what was bound inside it"
    fi
  done
  for dir in $(reverse "$OVERLAY"); do
    if mountpoint -q -- "$lower$dir"; then umount -R -- "$lower$dir"; fi
  done
  if ours "$tmpfs" tmpfs; then
    umount -- "$tmpfs"
    say "unmounted the tmpfs: the changes made under the overlays are gone"
  fi
}

started=0
on_exit() {
  code=$?
  if [ "$started" = 1 ]; then
    started=0
    printf '%s: start failed (exit %s): undoing what it mounted\n' "$PROG" "$code" >&2
    stop || printf '%s: error: could not undo all of it; see findmnt\n' "$PROG" >&2
  fi
  exit "$code"
}

if [ ! -d "$root/" ]; then die "ROOT $root: not a directory"; fi
case $action in
  start | stop)
    if [ "$(id -u)" != 0 ]; then die "$action needs root (it mounts file systems)"; fi
    for tool in findmnt mountpoint mount umount chown chmod; do
      command -v "$tool" >/dev/null || die "$tool not found (util-linux, coreutils)"
    done
    trap on_exit EXIT
    "$action" "$@"
    ;;
  check)
    now=$(status)
    echo "$now"
    case $now in active) exit 0 ;; inactive) exit 3 ;; *) exit 1 ;; esac
    ;;
  *)
    echo "usage: $0 start|stop|check [ROOT]" >&2
    exit 2
    ;;
esac
