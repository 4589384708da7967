#include "kvrt/version.h"

#include "kvrt/simd/dispatch_target.h"
#include "kvrt/threading/thread_pool.h"

namespace kvrt {

std::string_view Version() { return KVRT_VERSION_STRING; }
std::string_view SimdTarget() { return simd::DispatchedTargetName(); }
size_t DefaultThreads() { return threading::DefaultThreads(); }

}  // namespace kvrt
