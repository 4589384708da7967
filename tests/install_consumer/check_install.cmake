# ctest driver: install the build tree into a scratch prefix, then configure,
# build and run tests/install_consumer against that prefix only; then build the
# C consumer a second time with nothing but pkg-config and cc.
file(REMOVE_RECURSE "${WORK_DIR}")
execute_process(COMMAND ${CMAKE_COMMAND} --install "${BUILD_DIR}" --prefix "${WORK_DIR}/prefix"
                RESULT_VARIABLE rc)
if(rc)
  message(FATAL_ERROR "cmake --install failed: ${rc}")
endif()

# The installed headers are exactly the embedder's API: an internal header
# (kernels, engines, format readers, fault hooks) among them fails the test.
set(public_headers
  kvrt/chat.h kvrt/config.h kvrt/course.h kvrt/engine_options.h kvrt/error.h kvrt/generation.h kvrt/kvrt.h
  kvrt/load_model.h kvrt/model.h kvrt/model_file.h kvrt/rng.h kvrt/sampling.h kvrt/session.h
  kvrt/steps.h kvrt/synthetic.h kvrt/threading/tbb_arena.h kvrt/threading/thread_pool.h kvrt/tokenizer.h
  kvrt/version.h
  kvrt/weight_format.h)
file(GLOB_RECURSE installed RELATIVE "${WORK_DIR}/prefix/include" "${WORK_DIR}/prefix/include/*")
list(SORT installed)
list(SORT public_headers)
if(NOT installed STREQUAL public_headers)
  message(FATAL_ERROR "installed headers differ from the public API:\n  installed: ${installed}\n  expected:  ${public_headers}")
endif()
message(STATUS "installed headers: ${installed}")
execute_process(COMMAND ${CMAKE_COMMAND} -S "${SOURCE_DIR}" -B "${WORK_DIR}/build"
                        -DCMAKE_PREFIX_PATH=${WORK_DIR}/prefix -DCMAKE_BUILD_TYPE=Release
                RESULT_VARIABLE rc)
if(rc)
  message(FATAL_ERROR "configuring the consumer failed: ${rc}")
endif()
execute_process(COMMAND ${CMAKE_COMMAND} --build "${WORK_DIR}/build" RESULT_VARIABLE rc)
if(rc)
  message(FATAL_ERROR "building the consumer failed: ${rc}")
endif()
execute_process(COMMAND "${WORK_DIR}/build/consumer" RESULT_VARIABLE rc)
if(rc)
  message(FATAL_ERROR "the consumer failed: ${rc}")
endif()
if(NOT EXISTS "${WORK_DIR}/prefix/bin/kvrt")
  message(FATAL_ERROR "the kvrt CLI was not installed")
endif()

# The C API through CMake: text from the llama2.c fixture.
set(model "${SOURCE_DIR}/../../fixtures/llama2c/gqa_untied.bin")
set(tokenizer "${SOURCE_DIR}/../../fixtures/llama2c/tokenizer.bin")
execute_process(COMMAND "${WORK_DIR}/build/consumer_c" "${model}" "${tokenizer}" RESULT_VARIABLE rc
                OUTPUT_VARIABLE cmake_text)
if(rc)
  message(FATAL_ERROR "the C consumer failed: ${rc}")
endif()

# The C API through pkg-config only: kvrt.pc must name every library.
find_program(PKG_CONFIG pkg-config REQUIRED)
find_program(C_COMPILER NAMES cc gcc REQUIRED)
file(GLOB pc_file "${WORK_DIR}/prefix/lib*/pkgconfig/kvrt.pc" "${WORK_DIR}/prefix/lib/*/pkgconfig/kvrt.pc")
if(NOT pc_file)
  message(FATAL_ERROR "kvrt.pc was not installed")
endif()
get_filename_component(pc_dir "${pc_file}" DIRECTORY)
set(ENV{PKG_CONFIG_PATH} "${pc_dir}")
execute_process(COMMAND ${PKG_CONFIG} --cflags --libs kvrt RESULT_VARIABLE rc OUTPUT_VARIABLE flags
                OUTPUT_STRIP_TRAILING_WHITESPACE)
if(rc)
  message(FATAL_ERROR "pkg-config kvrt failed: ${rc}")
endif()
separate_arguments(flags UNIX_COMMAND "${flags}")
execute_process(COMMAND ${C_COMPILER} -std=c11 -O2 "${SOURCE_DIR}/consumer_c.c" ${flags}
                        -o "${WORK_DIR}/consumer_c_pkgconfig"
                RESULT_VARIABLE rc)
if(rc)
  message(FATAL_ERROR "building the C consumer with pkg-config flags (${flags}) failed: ${rc}")
endif()
execute_process(COMMAND "${WORK_DIR}/consumer_c_pkgconfig" "${model}" "${tokenizer}" RESULT_VARIABLE rc
                OUTPUT_VARIABLE pkgconfig_text)
if(rc)
  message(FATAL_ERROR "the pkg-config C consumer failed: ${rc}")
endif()
if(NOT pkgconfig_text STREQUAL cmake_text)
  message(FATAL_ERROR "the two C consumers disagree:\n${cmake_text}\n${pkgconfig_text}")
endif()
message(STATUS "C consumer: ${pkgconfig_text}")

# The host's allocator stays libc's, through CMake and through pkg-config: the
# package must not bring an allocator that replaces malloc or operator new.
execute_process(COMMAND "${WORK_DIR}/build/malloc_owner" "${model}" RESULT_VARIABLE rc
                OUTPUT_VARIABLE owners ERROR_VARIABLE owner_errors)
if(rc)
  message(FATAL_ERROR "malloc_owner (CMake) failed: ${rc}\n${owners}${owner_errors}")
endif()
message(STATUS "allocator owners (CMake):\n${owners}")
execute_process(COMMAND ${C_COMPILER} -std=c11 -O2 "${SOURCE_DIR}/malloc_owner.c" ${flags}
                        -o "${WORK_DIR}/malloc_owner_pkgconfig"
                RESULT_VARIABLE rc)
if(rc)
  message(FATAL_ERROR "building malloc_owner with pkg-config flags (${flags}) failed: ${rc}")
endif()
execute_process(COMMAND "${WORK_DIR}/malloc_owner_pkgconfig" "${model}" RESULT_VARIABLE rc
                OUTPUT_VARIABLE owners ERROR_VARIABLE owner_errors)
if(rc)
  message(FATAL_ERROR "malloc_owner (pkg-config) failed: ${rc}\n${owners}${owner_errors}")
endif()
message(STATUS "allocator owners (pkg-config):\n${owners}")
# The README's example project, extracted from README.md now (not a copy that could
# drift): configured with nothing but find_package(kvrt), so the C++23 requirement
# must come with kvrt::kvrt; built and run on the demo model.
include("${SOURCE_DIR}/readme_snippets.cmake")
set(readme_dir "${WORK_DIR}/readme")
kvrt_extract_readme_snippets("${SOURCE_DIR}/../../README.md" "${readme_dir}")
foreach(file CMakeLists.txt generate.cc generate.c)
  if(NOT EXISTS "${readme_dir}/${file}")
    message(FATAL_ERROR "README.md has no `<!-- readme-test: ${file} -->` block")
  endif()
endforeach()
execute_process(COMMAND ${CMAKE_COMMAND} -S "${readme_dir}" -B "${readme_dir}/build"
                        -DCMAKE_PREFIX_PATH=${WORK_DIR}/prefix -DCMAKE_BUILD_TYPE=Release
                RESULT_VARIABLE rc)
if(rc)
  message(FATAL_ERROR "configuring the README example failed: ${rc}")
endif()
execute_process(COMMAND ${CMAKE_COMMAND} --build "${readme_dir}/build" RESULT_VARIABLE rc)
if(rc)
  message(FATAL_ERROR "building the README example failed: ${rc}")
endif()
set(demo_model "${SOURCE_DIR}/../../fixtures/demo/demo.ckpt")
foreach(program generate_cpp generate_c)
  execute_process(COMMAND "${readme_dir}/build/${program}" "${demo_model}" RESULT_VARIABLE rc
                  OUTPUT_VARIABLE text ERROR_VARIABLE errors)
  if(rc)
    message(FATAL_ERROR "the README's ${program} failed (${rc}): ${errors}")
  endif()
  # Both print the prompt, a continuation and a stop reason.
  if(NOT text MATCHES "^At dawn.+\n\\([0-9]+ tokens, stop: (eos|token-limit|context-limit)\\)\n$")
    message(FATAL_ERROR "the README's ${program} printed:\n${text}")
  endif()
  message(STATUS "README ${program}: ${text}")
endforeach()
