# `cmake --install` puts the library, its headers, the CLI and a CMake package
# config in the prefix, so another project can find_package(kvrt) and link
# kvrt::kvrt.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set_target_properties(kvrt_simd PROPERTIES EXPORT_NAME simd)
set_target_properties(kvrt_threading PROPERTIES EXPORT_NAME threading)
install(TARGETS kvrt kvrt_simd kvrt_threading
  EXPORT kvrtTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(TARGETS kvrt_cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
# Only what an embedder calls: runtime/include/kvrt (models, tokenizers, caches,
# sessions, sampling, generation, errors, engine options, the C API), the thread
# pool, and tbb_arena.h, the one header that includes oneTBB, for embedders who
# lend kvrt an arena of theirs. Kernels (simd/) and everything under runtime/src
# stay internal.
install(DIRECTORY ${PROJECT_SOURCE_DIR}/runtime/include/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(FILES ${PROJECT_SOURCE_DIR}/threading/include/kvrt/threading/thread_pool.h
              ${PROJECT_SOURCE_DIR}/threading/include/kvrt/threading/tbb_arena.h
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/kvrt/threading)

set(KVRT_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/kvrt)
install(EXPORT kvrtTargets NAMESPACE kvrt:: DESTINATION ${KVRT_CMAKE_DIR})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/kvrtConfig.cmake.in
  ${PROJECT_BINARY_DIR}/kvrtConfig.cmake INSTALL_DESTINATION ${KVRT_CMAKE_DIR})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/kvrtConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/kvrtConfig.cmake ${PROJECT_BINARY_DIR}/kvrtConfigVersion.cmake
  DESTINATION ${KVRT_CMAKE_DIR})

# pkg-config: the C API (kvrt/kvrt.h) and the C++ API (C++23) for builds without
# CMake. The libraries are static, so Libs lists every dependency, the C++
# runtime included (a C program links with cc), and Requires names oneTBB's tbb.pc
# (the thread pool runs on it). The prefix is derived from the
# .pc file's own location, so the installed tree may move (cmake --install
# --prefix DIR relocates it).
set(KVRT_PKGCONFIG_DIR ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
file(RELATIVE_PATH KVRT_PC_TO_PREFIX "/prefix/${KVRT_PKGCONFIG_DIR}" "/prefix")
string(REGEX REPLACE "/$" "" KVRT_PC_TO_PREFIX "${KVRT_PC_TO_PREFIX}")
file(CONFIGURE OUTPUT ${PROJECT_BINARY_DIR}/kvrt.pc @ONLY CONTENT [=[
prefix=${pcfiledir}/@KVRT_PC_TO_PREFIX@
libdir=${prefix}/@CMAKE_INSTALL_LIBDIR@
includedir=${prefix}/@CMAKE_INSTALL_INCLUDEDIR@

Name: kvrt
Description: @PROJECT_DESCRIPTION@ (C API: kvrt/kvrt.h; C++23 API: kvrt/*.h)
Version: @PROJECT_VERSION@
Requires: libhwy libhwy-contrib libpcre2-8 tbb
Cflags: -I${includedir}
Libs: -L${libdir} -lkvrt -lkvrt_simd -lkvrt_threading -lstdc++ -lm -lpthread
]=])
install(FILES ${PROJECT_BINARY_DIR}/kvrt.pc DESTINATION ${KVRT_PKGCONFIG_DIR})
