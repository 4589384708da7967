/* Linking kvrt must not replace the host's allocator. A C11 program linked
 * against the installed package (through find_package(kvrt) and through
 * pkg-config, see check_install.cmake) loads a model through the C API, then
 * checks that malloc, free and operator new resolve to the C and C++ runtimes
 * (dladdr of the symbols the process binds), and that no allocator library
 * (mimalloc, jemalloc, tcmalloc) is loaded at all. Exit status 0 when they do. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <kvrt/kvrt.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures = 0;

static void ExpectOwner(const char* symbol, const char* library) {
  void* address = dlsym(RTLD_DEFAULT, symbol);
  Dl_info info;
  if (address == NULL || dladdr(address, &info) == 0 || info.dli_fname == NULL) {
    /* operator new is absent when nothing in the process uses libstdc++. */
    if (strcmp(library, "libstdc++") != 0) {
      fprintf(stderr, "%s: not resolved\n", symbol);
      ++failures;
    }
    return;
  }
  printf("%s -> %s\n", symbol, info.dli_fname);
  if (strstr(info.dli_fname, library) == NULL) {
    fprintf(stderr, "%s resolves to %s, not %s\n", symbol, info.dli_fname, library);
    ++failures;
  }
}

static int RejectAllocatorLibraries(struct dl_phdr_info* info, size_t size, void* data) {
  (void)size;
  (void)data;
  const char* allocators[] = {"mimalloc", "jemalloc", "tcmalloc"};
  for (size_t i = 0; i < sizeof allocators / sizeof allocators[0]; ++i) {
    if (info->dlpi_name != NULL && strstr(info->dlpi_name, allocators[i]) != NULL) {
      fprintf(stderr, "an allocator library is loaded: %s\n", info->dlpi_name);
      ++failures;
    }
  }
  return 0;
}

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s MODEL\n", argv[0]);
    return 2;
  }
  /* Use the runtime, so that every object of it the program needs is linked. */
  kvrt_model* model = NULL;
  kvrt_error* error = kvrt_model_load(argv[1], &model);
  if (error != NULL) {
    fprintf(stderr, "error: %s: %s\n", kvrt_error_name(error), kvrt_error_message(error));
    kvrt_error_free(error);
    return 1;
  }
  void* block = malloc(1 << 20);
  free(block);
  ExpectOwner("malloc", "libc.so");
  ExpectOwner("free", "libc.so");
  ExpectOwner("calloc", "libc.so");
  ExpectOwner("posix_memalign", "libc.so");
  ExpectOwner("_Znwm", "libstdc++");
  ExpectOwner("_ZdlPv", "libstdc++");
  dl_iterate_phdr(RejectAllocatorLibraries, NULL);
  kvrt_model_free(model);
  return failures == 0 ? 0 : 1;
}
