#!/usr/bin/env bash
# Turns an Ubuntu machine into aifabric's reference environment: Mininet and
# tshark from Ubuntu, the real P4 toolchain (p4c, BMv2 with simple_switch_grpc,
# PI) from the p4lang apt repository, then the project itself through
# scripts/setup.sh, the same script `make setup` runs.
#
# The Vagrantfile runs it when the VM is provisioned. It works the same on a
# bare Ubuntu machine: sudo scripts/provision-vm.sh (from any directory; the
# repository is the one this script lives in).
#
# Idempotent: a second run only checks what is there and is done in seconds
# (plus setup.sh's own check). It never adds an apt source twice.
#
# Usage: sudo scripts/provision-vm.sh [--no-p4] [--recreate-venv] [--dry-run]
#   --no-p4          skip the p4lang repository and packages (or AIFABRIC_NO_P4=1)
#   --recreate-venv  move aside a .venv that another Python made, e.g. the
#                    host's venv seen through the synced folder (or
#                    AIFABRIC_RECREATE_VENV=1); setup.sh then makes a new one
#   --dry-run        print the commands and the files it would write, change
#                    nothing (no root needed)
#   -h, --help       this text
set -euo pipefail

# The p4lang packages (p4lang-p4c, p4lang-bmv2 which carries simple_switch_grpc,
# p4lang-pi) are published on the openSUSE Build Service, project home:p4lang.
# Ubuntu 22.04 is the release they are built and tested for; without them,
# Mininet, tshark and the project (Python >= 3.10) also work on 24.04.
P4_RELEASES=(22.04)
NO_P4_RELEASES=(22.04 24.04)
P4_PACKAGES=(p4lang-p4c p4lang-bmv2 p4lang-pi)
# simple_switch_CLI (queue depth and rate over Thrift, the PFC emulation) is a
# Python script that imports Thrift's Python library at start-up.
P4_PYTHON_PACKAGES=(python3-thrift)
P4_TOOLS=(p4c p4c-bm2-ss simple_switch_grpc simple_switch_CLI)
BASE_PACKAGES=(mininet tshark)
P4_REPO_BASE="https://download.opensuse.org/repositories/home:/p4lang"
KEYRING_DIR=/etc/apt/keyrings
KEYRING="$KEYRING_DIR/p4lang.gpg"
SOURCE_FILE=/etc/apt/sources.list.d/aifabric-p4lang.list
# Accounts that get capture rights through the wireshark group, if they exist
# (vagrant in the Vagrant boxes, ubuntu on Ubuntu cloud images).
CAPTURE_USERS=(ubuntu vagrant "${SUDO_USER:-}")
# Tests point this at a fixture; everyone else reads the machine's own.
OS_RELEASE="${AIFABRIC_OS_RELEASE:-/etc/os-release}"

REPO_DIR="$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.." && pwd)"
PROG="provision-vm"

DRY_RUN=0
NO_P4="${AIFABRIC_NO_P4:-0}"
RECREATE_VENV="${AIFABRIC_RECREATE_VENV:-0}"
APT_UPDATED=0
APT_GET=(apt-get -q -y -o DPkg::Lock::Timeout=600)
export DEBIAN_FRONTEND=noninteractive

say() { printf '%s: %s\n' "$PROG" "$*"; }
step() { printf '\n==> %s\n' "$*"; }
warn() { printf '%s: warning: %s\n' "$PROG" "$*" >&2; }
die() { printf '%s: %s\n' "$PROG" "$*" >&2; exit 1; }

usage() { sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "${BASH_SOURCE[0]}"; }

# Prints a command as "+ cmd args" and runs it, unless this is a dry run.
run() {
    printf '+'
    printf ' %q' "$@"
    printf '\n'
    if ((DRY_RUN)); then return 0; fi
    "$@"
}

# write_file PATH CONTENT: writes PATH (mode 0644) if its content differs.
# Returns 0 when it wrote (or would write), 1 when PATH already had CONTENT.
write_file() {
    local path="$1" content="$2"
    if [[ -f "$path" ]] && [[ "$(cat "$path")" == "$content" ]]; then
        say "$path is up to date"
        return 1
    fi
    printf '+ write %s <<EOF\n%s\nEOF\n' "$path" "$content"
    if ((DRY_RUN)); then return 0; fi
    local tmp
    tmp="$(mktemp "$path.XXXXXX")"
    printf '%s\n' "$content" >"$tmp"
    chmod 0644 "$tmp"
    mv -f "$tmp" "$path"
}

in_list() {
    local want="$1" item
    shift
    for item in "$@"; do [[ "$item" == "$want" ]] && return 0; done
    return 1
}

# join_or A B C -> "A, B or C"
join_or() {
    local out="$1"
    shift
    while (($# > 1)); do
        out+=", $1"
        shift
    done
    (($#)) && out+=" or $1"
    printf '%s' "$out"
}

# os_field KEY: the value of KEY in the os-release file, quotes removed.
os_field() {
    sed -n "s/^$1=//p" "$OS_RELEASE" | head -n 1 | tr -d '"'"'"
}

is_installed() {
    [[ "$(dpkg-query -W -f='${Status}' "$1" 2>/dev/null || true)" == "install ok installed" ]]
}

apt_update() {
    if ((APT_UPDATED)); then return 0; fi
    run "${APT_GET[@]}" update
    APT_UPDATED=1
}

# apt_install [--recommends] PKG...: installs the packages that are missing.
apt_install() {
    local recommends=(--no-install-recommends) pkg present=() missing=()
    if [[ "${1:-}" == --recommends ]]; then
        recommends=()
        shift
    fi
    for pkg in "$@"; do
        if in_list "$pkg" "${present[@]}" "${missing[@]}"; then continue; fi
        if is_installed "$pkg"; then present+=("$pkg"); else missing+=("$pkg"); fi
    done
    if ((${#present[@]})); then say "already installed: ${present[*]}"; fi
    if ((${#missing[@]} == 0)); then return 0; fi
    say "installing ${missing[*]}"
    apt_update
    run "${APT_GET[@]}" install "${recommends[@]}" "${missing[@]}"
}

# The Debian packages scripts/setup.sh wants (its APT_PACKAGES line). Installing
# them here, with apt's lock timeout, means setup.sh finds them all present and
# does not race a fresh VM's unattended-upgrades for the dpkg lock.
setup_sh_packages() {
    sed -n 's/^APT_PACKAGES=(\(.*\))[[:space:]]*$/\1/p' "$REPO_DIR/scripts/setup.sh" | head -n 1
}

check_os() {
    local hint
    hint="Ubuntu $(join_or "${P4_RELEASES[@]}") (with --no-p4: Ubuntu $(join_or "${NO_P4_RELEASES[@]}"))"
    [[ -r "$OS_RELEASE" ]] || die "cannot read $OS_RELEASE; supported: $hint"
    OS_ID="$(os_field ID)"
    OS_VERSION="$(os_field VERSION_ID)"
    local name
    name="$(os_field PRETTY_NAME)"
    name="${name:-$OS_ID $OS_VERSION}"
    if [[ "$OS_ID" != ubuntu ]]; then
        die "$name is not Ubuntu; supported: $hint."
    fi
    if ((NO_P4)); then
        in_list "$OS_VERSION" "${NO_P4_RELEASES[@]}" ||
            die "Ubuntu $OS_VERSION is not supported; supported: $hint."
    elif ! in_list "$OS_VERSION" "${P4_RELEASES[@]}"; then
        if in_list "$OS_VERSION" "${NO_P4_RELEASES[@]}"; then
            die "Ubuntu $OS_VERSION has no p4lang packages (p4c, BMv2, PI); supported: $hint."
        fi
        die "Ubuntu $OS_VERSION is not supported; supported: $hint."
    fi
}

# A .venv made by another Python (typically the host's, seen through the synced
# folder) looks present to setup.sh but cannot work here.
check_venv() {
    local cfg="$REPO_DIR/.venv/pyvenv.cfg" have want
    [[ -f "$cfg" ]] || return 0
    have="$(sed -n 's/^version\(_info\)\{0,1\}[[:space:]]*=[[:space:]]*\([0-9]*\.[0-9]*\).*/\2/p' "$cfg" | head -n 1)"
    want="$(/usr/bin/python3 -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null || true)"
    if [[ -z "$have" || -z "$want" || "$have" == "$want" ]]; then
        return 0
    fi
    if ! ((RECREATE_VENV)); then
        die "$REPO_DIR/.venv was made by Python $have but this machine's /usr/bin/python3 is $want (a venv from another machine through the shared folder?); rerun with --recreate-venv (AIFABRIC_RECREATE_VENV=1) to move it aside, or remove it."
    fi
    local aside="$REPO_DIR/.venv.python$have"
    [[ -e "$aside" ]] && aside="$aside.$(date +%Y%m%d%H%M%S)"
    say "moving the Python $have venv aside to $aside"
    run mv "$REPO_DIR/.venv" "$aside"
}

install_base() {
    step "Mininet, tshark and the Debian packages setup.sh needs"
    # tshark asks whether non-root users may capture; answer yes, and let the
    # wireshark group hold that right.
    local answer="wireshark-common wireshark-common/install-setuid boolean true"
    printf "+ debconf-set-selections <<< '%s'\n" "$answer"
    ((DRY_RUN)) || debconf-set-selections <<<"$answer"
    local setup_pkgs=()
    read -r -a setup_pkgs <<<"$(setup_sh_packages)"
    apt_install "${BASE_PACKAGES[@]}" "${setup_pkgs[@]}"

    if ! getent group wireshark >/dev/null; then
        run dpkg-reconfigure -f noninteractive wireshark-common
    fi
    local user
    for user in "${CAPTURE_USERS[@]}"; do
        [[ -n "$user" && "$user" != root ]] || continue
        id "$user" >/dev/null 2>&1 || continue
        if [[ " $(id -nG "$user") " == *" wireshark "* ]]; then
            say "$user is in the wireshark group"
        else
            run usermod -aG wireshark "$user"
            say "$user may capture after logging in again"
        fi
    done
}

# Adds the p4lang apt repository (key under $KEYRING_DIR, signed-by) unless
# an apt source already names it. Sets REPO_CHANGED=1 when it changed anything.
add_p4_repo() {
    local repo_url="$P4_REPO_BASE/xUbuntu_$OS_VERSION/"
    local key_url="${repo_url}Release.key"
    local others
    others="$(grep -rlsE --include='*.list' --include='*.sources' 'repositories/home:/?p4lang/' \
        /etc/apt/sources.list /etc/apt/sources.list.d/ | grep -vxF "$SOURCE_FILE" || true)"
    if [[ -n "$others" ]]; then
        say "the p4lang repository is already configured in $(echo "$others" | tr '\n' ' ')- using that"
        return 0
    fi
    run install -d -m 0755 "$KEYRING_DIR"
    # Fetched every run (one small request) so that a key OBS has extended
    # replaces an expired copy; written only when it differs.
    printf '+ curl -fsSL %q | gpg --dearmor -o %q\n' "$key_url" "$KEYRING"
    if ((DRY_RUN)); then
        REPO_CHANGED=1
    else
        local tmp
        tmp="$(mktemp -d)"
        if curl -fsSL --retry 3 "$key_url" -o "$tmp/Release.key" &&
            gpg --homedir "$tmp" --batch --yes --dearmor -o "$tmp/p4lang.gpg" "$tmp/Release.key"; then
            if cmp -s "$tmp/p4lang.gpg" "$KEYRING"; then
                say "$KEYRING is up to date"
            else
                install -m 0644 "$tmp/p4lang.gpg" "$KEYRING"
                REPO_CHANGED=1
            fi
        elif [[ -s "$KEYRING" ]]; then
            warn "could not refresh the p4lang key from $key_url; keeping $KEYRING"
        else
            rm -rf "$tmp"
            die "could not download the p4lang signing key from $key_url"
        fi
        rm -rf "$tmp"
    fi
    if write_file "$SOURCE_FILE" "deb [signed-by=$KEYRING] $repo_url /"; then
        REPO_CHANGED=1
    fi
}

install_p4() {
    step "The P4 toolchain: ${P4_PACKAGES[*]} (p4lang repository, Ubuntu $OS_VERSION)"
    apt_install curl gpg ca-certificates
    REPO_CHANGED=0
    add_p4_repo
    if ((REPO_CHANGED)); then
        APT_UPDATED=0
        apt_update
    fi
    # With their recommends, as upstream installs them (p4c needs a C
    # preprocessor at run time).
    apt_install --recommends "${P4_PACKAGES[@]}"
    apt_install "${P4_PYTHON_PACKAGES[@]}"
    if ((DRY_RUN)); then return 0; fi
    local tool missing=()
    for tool in "${P4_TOOLS[@]}"; do
        command -v "$tool" >/dev/null || missing+=("$tool")
    done
    if ((${#missing[@]})); then
        die "${missing[*]} not on PATH after installing ${P4_PACKAGES[*]}; see 'dpkg -L p4lang-bmv2' and 'apt-cache policy ${P4_PACKAGES[*]}'"
    fi
    # --help parses its options after the imports, so it fails where the
    # Thrift Python modules (thrift, bm_runtime, sswitch_runtime) are missing.
    if ! simple_switch_CLI --help >/dev/null 2>&1; then
        die "simple_switch_CLI does not start (its Thrift Python modules are missing?); run 'simple_switch_CLI --help' to see why"
    fi
    # --priority-queues came with BMv2 1.15.1; an older simple_switch_grpc
    # rejects every target option, --grpc-server-addr included.
    local help_text
    help_text="$(simple_switch_grpc --help 2>&1 || true)"
    if [[ "$help_text" != *--priority-queues* ]]; then
        die "simple_switch_grpc has no --priority-queues option: aifabric needs BMv2 1.15.1 or later (see 'apt-cache policy p4lang-bmv2')"
    fi
    # The project's own compile step (emulator/network/bmv2.py): fabric.p4 to
    # BMv2 JSON and text P4Info, as every --target bmv2 run does first.
    local out said
    out="$(mktemp -d)"
    if ! said="$(p4c-bm2-ss --p4v 16 --p4runtime-files "$out/fabric.p4info.txtpb" \
        -o "$out/fabric.json" "$REPO_DIR/p4src/fabric.p4" 2>&1)"; then
        rm -rf "$out"
        die "p4c-bm2-ss cannot compile p4src/fabric.p4: $(printf '%s\n' "$said" | grep -m1 -i error || printf '%s\n' "$said" | tail -n 1)"
    fi
    rm -rf "$out"
}

install_project() {
    step "The project: scripts/setup.sh (what 'make setup' runs), as root from $REPO_DIR"
    check_venv
    run cd "$REPO_DIR"
    run bash scripts/setup.sh
}

summary() {
    ((DRY_RUN)) && return 0
    step "Done"
    local line
    if command -v p4c >/dev/null; then
        line="$(p4c --version 2>/dev/null | head -n 1 || true)"
        say "p4c: ${line:-installed}"
        line="$(simple_switch_grpc --version 2>/dev/null | head -n 1 || true)"
        say "simple_switch_grpc: ${line:-installed}"
    fi
    line="$(dpkg-query -W -f='${Version}' mininet 2>/dev/null || true)"
    say "mininet: ${line:-?}"
    line="$(dpkg-query -W -f='${Version}' tshark 2>/dev/null || true)"
    say "tshark: ${line:-?}"
    say "next: cd $REPO_DIR && sudo make run TARGET=bmv2   (or: sudo make test)"
}

main() {
    local args=("$@")
    while (($#)); do
        case "$1" in
        --dry-run) DRY_RUN=1 ;;
        --no-p4) NO_P4=1 ;;
        --recreate-venv) RECREATE_VENV=1 ;;
        -h | --help)
            usage
            exit 0
            ;;
        *) die "unknown option '$1' (try --help)" ;;
        esac
        shift
    done
    [[ "$NO_P4" == 1 ]] || NO_P4=0
    [[ "$RECREATE_VENV" == 1 ]] || RECREATE_VENV=0

    check_os
    if ! ((DRY_RUN)) && ((EUID != 0)); then
        die "needs root: sudo $0 ${args[*]} (or --dry-run to see what it would do)"
    fi
    local note=""
    ((DRY_RUN)) && note=" (dry run: nothing is changed)"
    say "provisioning Ubuntu $OS_VERSION for aifabric in $REPO_DIR$note"

    install_base
    if ((NO_P4)); then
        say "skipping the p4lang packages (--no-p4)"
    else
        install_p4
    fi
    install_project
    summary
}

# Sourcing the script (tests do) defines the functions and runs nothing.
if [[ "${BASH_SOURCE[0]}" == "$0" ]]; then
    main "$@"
fi
