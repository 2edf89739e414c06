#!/bin/sh
# Build darshan-runtime (with its HDF5 module) from Darshan's source release, for the side-by-side of
# benchmarks/speed/tracing_overhead.py (the Darshan column; skipped, saying so, when this build is not there).
#
#   benchmarks/helpers/darshan_build.sh [SOURCE]
#
# SOURCE: a Darshan git directory (e.g. a clone of github.com/darshan-hpc/darshan, or the bare snapshot the
# session's fetch tool gives, /work/.mirror/darshan-hpc+darshan/repo) or a release tarball (darshan-X.Y.Z.tar.gz).
# Default: $DARSHAN_SOURCE, else that snapshot. The git tag DARSHAN_TAG (default 3.5.0) is archived.
# Installs into $IOADVISOR_CACHE/darshan (default ~/.cache/ioadvisor/darshan): lib/libdarshan.so, bin/,
# and a log directory logs/. Serial (--without-mpi), against Debian's serial libhdf5 (libhdf5-dev, hdf5-tools),
# with LD_PRELOAD support; the benchmark sets DARSHAN_LOGPATH per run... and DARSHAN_ENABLE_NONMPI=1.
# Variants: DARSHAN_PREFIX (default $IOADVISOR_CACHE/darshan) installs elsewhere; DARSHAN_MPI=1 builds with
# Debian's mpicc (MPICH; logs carry the job's ranks, run under mpiexec.mpich); DARSHAN_HDF5=0 leaves the
# HDF5 module out (most centers' builds: logs without H5D/H5F).
# Needs: cc, make, autoconf, automake, libtool (apt-get install -y autoconf automake libtool libhdf5-dev
# hdf5-tools zlib1g-dev).
set -eu
TAG=${DARSHAN_TAG:-3.5.0}
CACHE=${IOADVISOR_CACHE:-$HOME/.cache/ioadvisor}
PREFIX=${DARSHAN_PREFIX:-$CACHE/darshan}
MPI=${DARSHAN_MPI:-0}
WITH_HDF5=${DARSHAN_HDF5:-1}
SOURCE=${1:-${DARSHAN_SOURCE:-/work/.mirror/darshan-hpc+darshan/repo}}
HDF5_SERIAL=/usr/lib/x86_64-linux-gnu/hdf5/serial

if [ -e "$PREFIX/lib/libdarshan.so" ]; then
    echo "darshan already built: $PREFIX/lib/libdarshan.so"
    exit 0
fi
BUILD=$(mktemp -d "${TMPDIR:-/tmp}/darshan-build.XXXXXX")
trap 'rm -rf "$BUILD"' EXIT
case "$SOURCE" in
    *.tar.gz|*.tgz) tar -xzf "$SOURCE" -C "$BUILD" --strip-components=1 ;;
    *) git -C "$SOURCE" archive --format=tar "$TAG" | tar -x -C "$BUILD" ;;
esac
cd "$BUILD"
[ -x configure ] || ./prepare.sh >/dev/null

# darshan's configure wants an HDF5 prefix with bin/h5dump, include/ and lib/: Debian splits them
H5=$BUILD/hdf5-prefix
mkdir -p "$H5/bin"
ln -s "$(command -v h5dump)" "$H5/bin/h5dump"
ln -s "$HDF5_SERIAL/include" "$H5/include"
ln -s "$HDF5_SERIAL/lib" "$H5/lib"

mkdir -p build "$PREFIX/logs"
cd build
if [ "$MPI" = 1 ]; then MPIFLAG=""; CCX=mpicc; else MPIFLAG="--without-mpi"; CCX=cc; fi
if [ "$WITH_HDF5" = 1 ]; then H5FLAGS="--enable-hdf5-mod --with-hdf5=$H5"; else H5FLAGS=""; fi
# shellcheck disable=SC2086 - the flag lists are meant to split
../configure --prefix="$PREFIX" $MPIFLAG $H5FLAGS \
    --with-log-path-by-env=DARSHAN_LOGPATH --with-log-path="$PREFIX/logs" --with-jobid-env=NONE \
    --disable-darshan-util CC="$CCX" >configure.log 2>&1 || { tail -30 configure.log; exit 1; }
make -j2 >make.log 2>&1 || { tail -30 make.log; exit 1; }
make install >install.log 2>&1 || { tail -30 install.log; exit 1; }
echo "darshan $TAG built: $PREFIX/lib/libdarshan.so"
