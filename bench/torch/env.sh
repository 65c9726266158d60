# How bench/*.sh run the PyTorch side (sourced): torch_fast is PyTorch at its fastest on this
# machine (OpenBLAS with AVX-512 kernels, ATen's AVX-512 kernels, jemalloc without decay, see
# ../shared/BENCHMARKS.md), torch_default is PyTorch as Debian installs it. Sourcing it installs
# those packages where they are missing.
bash "$(dirname "${BASH_SOURCE[0]}")/../../scripts/install-deps.sh" --bench >&2
torch_fast() {
  LD_LIBRARY_PATH=/usr/lib/x86_64-linux-gnu/openblas-openmp OPENBLAS_CORETYPE=SkylakeX \
    ATEN_CPU_CAPABILITY=avx512 LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2 \
    MALLOC_CONF=dirty_decay_ms:-1,muzzy_decay_ms:-1,oversize_threshold:0 \
    /usr/bin/python3 "$@"
}
torch_default() { /usr/bin/python3 "$@"; }
