# libFuzzer targets (tests/fuzz), built only with -DKVRT_BUILD_FUZZERS=ON.
#
# Requirements, checked here so a wrong configuration fails at configure time
# rather than with a link error:
#   * clang with libFuzzer. Debian 12: clang-16 and libclang-rt-16-dev. clang 14
#     cannot compile libstdc++ 12's std::expected (no P0848), and clang < 19 also
#     needs -D__cpp_concepts=202002L to make <expected> visible at all; both are
#     set by tools/fuzz.sh and the "fuzz" preset of CMakePresets.json.
#   * KVRT_SANITIZE=address, so every kvrt target, the fuzzers included, is built
#     with ASan+UBSan by kvrt_apply_options.
#
# The kvrt libraries get coverage instrumentation (-fsanitize=fuzzer-no-link)
# added here, after their definition; the fuzzers link libFuzzer's main.
# Build everything with `cmake --build <dir> --target kvrt_fuzzers`.
include_guard(GLOBAL)
include(CheckCXXSourceCompiles)

if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
  message(FATAL_ERROR "KVRT_BUILD_FUZZERS needs clang (libFuzzer); configure with "
                      "-DCMAKE_CXX_COMPILER=clang++-16 (see tools/fuzz.sh)")
endif()
if(NOT KVRT_SANITIZE STREQUAL "address")
  message(FATAL_ERROR "KVRT_BUILD_FUZZERS needs -DKVRT_SANITIZE=address (ASan+UBSan everywhere)")
endif()

# std::expected of non-trivial types is what the public API returns everywhere.
check_cxx_source_compiles([=[
  #include <expected>
  #include <string>
  std::expected<std::string, std::string> F() { return std::string("ok"); }
  int main() { return F()->size() == 2 ? 0 : 1; }
]=] KVRT_FUZZ_HAS_STD_EXPECTED)
if(NOT KVRT_FUZZ_HAS_STD_EXPECTED)
  message(FATAL_ERROR "this clang cannot compile std::expected from libstdc++; use clang >= 16 "
                      "and, below clang 19, CMAKE_CXX_FLAGS=-D__cpp_concepts=202002L")
endif()

set(KVRT_FUZZ_FLAGS -fsanitize=fuzzer-no-link)
foreach(library kvrt kvrt_simd kvrt_threading kvrt_cli_requests)
  target_compile_options(${library} PRIVATE ${KVRT_FUZZ_FLAGS})
endforeach()

add_custom_target(kvrt_fuzzers)

# kvrt_add_fuzzer(<name> <sources>...): one libFuzzer binary, built by the
# kvrt_fuzzers target. Fixtures are read from the source tree, like the tests.
function(kvrt_add_fuzzer name)
  add_executable(${name} ${ARGN})
  target_link_libraries(${name} PRIVATE kvrt::internal)
  target_include_directories(${name} PRIVATE ${PROJECT_SOURCE_DIR}/tests/fuzz
                                             ${PROJECT_SOURCE_DIR}/runtime/src)
  target_compile_definitions(${name} PRIVATE
    KVRT_FIXTURES_DIR="${PROJECT_SOURCE_DIR}/fixtures")
  kvrt_apply_options(${name})
  target_compile_options(${name} PRIVATE -fsanitize=fuzzer)
  target_link_options(${name} PRIVATE -fsanitize=fuzzer)
  add_dependencies(kvrt_fuzzers ${name})
endfunction()
