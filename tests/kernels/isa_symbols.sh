#!/usr/bin/env bash
# Every copy of the kernels built for an instruction-set level above the baseline must keep
# its symbols to itself: a global or weak symbol it shares with the rest of the library (an
# inline function, a template instantiated from a common header) could be the one the linker
# keeps, and then a baseline caller would run AVX-512 code on a CPU without it. Each object's
# external symbols must name its level's namespace (frugal::kernels::cpu::<level>::) or its
# renamed Eigen (frugal_eigen_<level>::); a name nm cannot demangle (the static invoker of a
# lambda inside a template) must carry the level's mangled namespace (6avx512, 11avx512_bf16).
# Arguments: the objects of every per-level library.
set -euo pipefail
allowed_everywhere='^DW\.ref\.__gxx_personality_v0$'  # exception-handling data, no code
checked=0 bad=0
for object in "$@"; do
  level=$(sed -nE 's/.*frugal_kernels_cpu_[a-z_]+_(baseline|avx2|avx512_bf16|avx512)\.dir\/.*/\1/p' <<<"$object")
  [[ -n $level ]] || { echo "isa_symbols: cannot tell the level of $object" >&2; exit 2; }
  [[ $level == baseline ]] && continue  # the baseline copy is compiled like everything else
  checked=$((checked + 1))
  while read -r symbol; do
    [[ $symbol == *"::${level}::"* || $symbol == *"frugal_eigen_${level}::"* ]] && continue
    [[ $symbol == _Z* && $symbol == *"${#level}${level}"* ]] && continue
    [[ $symbol =~ $allowed_everywhere ]] && continue
    echo "isa_symbols: $(basename "$object") (level $level) exports '$symbol'"
    bad=$((bad + 1))
  done < <(nm --defined-only --extern-only --demangle --format=posix "$object" | sed -E 's/ [A-Za-z] [0-9a-f]*( [0-9a-f]*)?$//')
done
echo "isa_symbols: $checked per-level objects checked, $bad shared symbols"
[[ $checked -gt 0 || $# -eq 0 ]] || exit 1
[[ $bad -eq 0 ]]
