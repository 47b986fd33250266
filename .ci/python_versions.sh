#!/usr/bin/env bash
# The README's two set-up commands on the newer Pythons users have: 3.12 (Ubuntu 24.04's), 3.13
# and 3.14 (Debian's), each in a root of that distribution made with
# debootstrap, where pip resolves what a user of that Python gets today (on 3.12 and later
# numpy 2.5, which has left 3.11 behind; pandas 3; from 3.14 on no backports.zstd, the standard
# library's compression.zstd instead). Not part of .ci/run (CI is Python 3.11): it needs root,
# debootstrap, the Debian and Ubuntu archives, and a whole suite per version (~20 min each).
#
#   bash .ci/python_versions.sh                 # 3.12 3.13 3.14
#   bash .ci/python_versions.sh 3.12 3.14       # some of them
#   SUITE=no bash .ci/python_versions.sh 3.12   # the first command only
#   PYTEST_ARGS="-k worker_daemon" bash .ci/python_versions.sh 3.12   # some tests only
#
# What the tests need from the JVM side (the Java oracles, Kafka's jars, HDFS, the emulators) is
# built here first with this machine's Java, then copied with the checkout into each root, where
# this machine's JDK, node and the pypaimon oracle's Python are mounted read-only at their paths.
set -euo pipefail
cd "$(dirname "$0")/.."
checkout=$PWD
versions=${*:-3.12 3.13 3.14}
work=$(mktemp -d)
mounted=()
cleanup() {
    for m in "${mounted[@]}"; do umount -l "$m" || true; done
    if grep -q " $work/" /proc/mounts; then  # never remove through a mount of this machine's files
        echo "still mounted under $work: left in place" >&2
    else
        rm -rf "$work"
    fi
}
trap cleanup EXIT

echo "== the tests' artifacts, built on this machine"
bash tests/run.sh --co -q > "$work/build.log" 2>&1 || { tail -20 "$work/build.log"; exit 1; }
(cd tests && ../.venv/bin/python -c "import kafka_broker; kafka_broker.broker_classpath(); kafka_broker.connector_jars()")
command -v debootstrap > /dev/null || apt-get install -y -q debootstrap > /dev/null
java_home=$(dirname "$(dirname "$(readlink -f "$(command -v java)")")")
oracle_python=$(tests/.venv-oracle/bin/python -c 'import sys; print(sys.base_prefix)')

ubuntu_keyring() {  # the Ubuntu archive's keys, for debootstrap to check its packages with
    local keys=$work/ubuntu-keyring
    if [ ! -d "$keys" ]; then
        local deb
        deb=$(curl -fsS http://archive.ubuntu.com/ubuntu/dists/noble/main/binary-amd64/Packages.xz | xz -dc |
              sed -n '/^Package: ubuntu-keyring$/,/^$/s/^Filename: //p')
        curl -fsS -o "$work/ubuntu-keyring.deb" "http://archive.ubuntu.com/ubuntu/$deb"
        dpkg -x "$work/ubuntu-keyring.deb" "$keys"
    fi
    echo "$keys/usr/share/keyrings/ubuntu-archive-keyring.gpg"
}

make_root() {  # make_root VERSION ROOT: a minimal system of the distribution that ships python VERSION
    local v=$1 root=$2
    local packages=ca-certificates,git,python$v,python$v-venv
    local args=(--variant=minbase)
    case $v in
        3.12) args+=(--components=main,universe --keyring="$(ubuntu_keyring)")
              args+=(noble "$root" http://archive.ubuntu.com/ubuntu /usr/share/debootstrap/scripts/jammy) ;;
        3.13|3.14) args+=(forky "$root" http://deb.debian.org/debian /usr/share/debootstrap/scripts/sid) ;;
        *) echo "no distribution known here for Python $v" >&2; return 1 ;;
    esac
    debootstrap --include="$packages" "${args[@]}" > "$work/debootstrap-$v.log" 2>&1 ||
        { tail -20 "$work/debootstrap-$v.log"; return 1; }
    cp /etc/resolv.conf /etc/hosts "$root/etc/"
    cp /etc/ssl/certs/ca-certificates.crt "$root/etc/ssl/certs/ca-certificates.crt"  # a proxy's CA, if any
    [ ! -f /etc/pip.conf ] || cp /etc/pip.conf "$root/etc/"
    mount -t proc proc "$root/proc" && mounted=("$root/proc" "${mounted[@]}")
    mount --rbind /dev "$root/dev" && mounted=("$root/dev" "${mounted[@]}")
    local path
    for path in "$java_home" /etc/java-* "$(readlink -f "$(command -v node || echo /nonexistent)")" "$oracle_python"; do
        [ -e "$path" ] || continue  # Debian's JDKs link their conf to /etc/java-*
        if [ -d "$path" ]; then mkdir -p "$root$path"; else mkdir -p "$(dirname "$root$path")" && touch "$root$path"; fi
        mount --bind "$path" "$root$path" && mounted=("$root$path" "${mounted[@]}")
        mount -o remount,bind,ro "$root$path"
    done
    mkdir -p "$root$checkout"
    tar --exclude=./.venv -cf - . | tar -xf - -C "$root$checkout"
}

for v in $versions; do
    root=$work/python$v
    echo "== Python $v: a root in $root"
    make_root "$v" "$root"
    echo "== Python $v: the first command (.ci/user_install.sh), then unless SUITE=no the test command (tests/run.sh)"
    chroot "$root" env -u PIP_FIND_LINKS PATH="$java_home/bin:/usr/bin:/bin" JAVA_HOME="$java_home" CI=true \
        bash -c "set -e; cd '$checkout' && python$v -m venv /opt/python && /opt/python/bin/pip install -q --upgrade pip
                 PYTHON=/opt/python/bin/python bash .ci/user_install.sh
                 [ '${SUITE:-yes}' = no ] || PYTHON=/opt/python/bin/python bash tests/run.sh -p no:cacheprovider ${PYTEST_ARGS:-}"
done
echo "== passed on Python $versions"
