// Defaults for the sanitizer runtimes of the reliability binaries.
//
// The runtime turns every failed buffer allocation into a typed error, and the
// tests rely on that (a 128 TiB cache must come back as AllocationFailed). By
// default ASan and TSan abort the process on an impossible request instead of
// returning null; allocator_may_return_null restores the normal contract.
// ASAN_OPTIONS / TSAN_OPTIONS from the environment still override these.
extern "C" {
__attribute__((used)) const char* __asan_default_options() { return "allocator_may_return_null=1"; }
__attribute__((used)) const char* __tsan_default_options() { return "allocator_may_return_null=1"; }
}
