# Compile options shared by every kvrt target: kvrt_apply_options(<target>).

# Highway: compile only the targets that matter. The baseline (HWY_SCALAR with
# g++ 12.2, whose EMU128 target Highway marks broken) keeps every x86-64 CPU
# correct; AVX2 and AVX3 cover current machines. SSSE3 and SSE4 are left out:
# they would double the build time of every kernel for CPUs that gain little.
# Never -march=native: Highway 1.0.3 with g++ 12 stops with "best baseline
# should be included in dynamic targets" on these machines.
set(KVRT_HWY_DISABLED_TARGETS "(HWY_SSSE3|HWY_SSE4|HWY_AVX3_DL)")

function(kvrt_apply_options target)
  target_compile_options(${target} PRIVATE
    -Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor
    # g++ 12 reports false positives for std::variant<std::string, ...> moves
    # (GCC bugs 105329 and 105651); both warnings are noise for this code base.
    -Wno-maybe-uninitialized -Wno-restrict
    -ffp-contract=off -fno-fast-math
    # Keep libm calls opaque so GCC cannot constant-fold exp/log/pow/sin/cos
    # with correctly rounded MPFR results that may differ from glibc.
    -fno-builtin-exp -fno-builtin-log -fno-builtin-pow
    -fno-builtin-sin -fno-builtin-cos)
  target_compile_definitions(${target} PRIVATE
    HWY_DISABLED_TARGETS=${KVRT_HWY_DISABLED_TARGETS})
  if(KVRT_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
  if(KVRT_SANITIZE STREQUAL "address")
    target_compile_options(${target} PRIVATE -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined)
    target_link_options(${target} PRIVATE -fsanitize=address,undefined)
  elseif(KVRT_SANITIZE STREQUAL "thread")
    target_compile_options(${target} PRIVATE -fsanitize=thread -fno-omit-frame-pointer)
    target_link_options(${target} PRIVATE -fsanitize=thread)
  endif()
endfunction()
