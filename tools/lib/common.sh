# Shared by the scripts in tools/ (sourced, not run): package installation and
# the ccache launcher, so every build script installs and caches the same way.

# install_missing PACKAGE...: installs the Debian packages that are not
# installed yet (needs root or sudo; a fresh machine has neither cache nor lists).
install_missing() {
  local missing=()
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  echo "== installing: ${missing[*]}"
  local sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
}

# ccache_launcher ARRAY_NAME: fills the named array with the CMake flags that
# route compilers through ccache, or leaves it empty when ccache is missing or
# CCACHE_DISABLE is set (to time a cold build).
#
# The cache is keyed on paths relative to the checkout (CCACHE_BASEDIR, and no
# working directory in the hash), so a fresh clone elsewhere on the same machine,
# as CI makes, reuses what any other checkout of the same sources compiled.
ccache_launcher() {
  local -n flags="$1"
  flags=()
  if [ -z "${CCACHE_DISABLE:-}" ] && command -v ccache >/dev/null; then
    export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$ROOT}"
    export CCACHE_NOHASHDIR="${CCACHE_NOHASHDIR:-1}"
    flags=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
  fi
}
