// Names and the one validity rule of EngineOptions (kvrt/engine_options.h).
#include <string>

#include "kvrt/engine_options.h"

namespace kvrt {

std::string_view PrecisionName(Precision precision) {
  return precision == Precision::kF64 ? "f64" : "f32";
}

std::string_view BackendName(Backend backend) {
  return backend == Backend::kReference ? "reference" : "fast";
}

std::string_view KvTypeName(KvType type) {
  switch (type) {
    case KvType::kF16: return "f16";
    case KvType::kBf16: return "bf16";
    case KvType::kQ8_0: return "q8_0";
    default: return "engine";
  }
}

Result<void> EngineOptions::Validate() const {
  if (backend != Backend::kReference && backend != Backend::kFast) {
    return Fail(ErrorCode::kUnsupportedBackend, {{"", std::string("unknown")}},
                "backend " + std::to_string(static_cast<int>(backend)) + " is not available");
  }
  if (precision != Precision::kF64 && precision != Precision::kF32) {
    return Fail(ErrorCode::kUnsupportedBackend, {{"", std::string("unknown")}},
                "precision " + std::to_string(static_cast<int>(precision)) + " is not available");
  }
  if (!IsKnownWeightFormat(weights)) {
    return Fail(ErrorCode::kUnsupportedBackend, {{"", std::string("unknown")}},
                "weight format " + std::to_string(static_cast<int>(weights)) + " is not available");
  }
  // The reference engine is the bit-exact f64 path of the specification.
  if (backend == Backend::kReference && precision != Precision::kF64) {
    return Fail(ErrorCode::kUnsupportedBackend, {{"", std::string(PrecisionName(precision))}},
                "the reference backend computes in f64 only");
  }
  if (kv_type != KvType::kEngine && !IsCompactKvType(kv_type)) {
    return Fail(ErrorCode::kUnsupportedBackend, {{"", std::string("unknown")}},
                "KV cache type " + std::to_string(static_cast<int>(kv_type)) + " is not available");
  }
  // The compact caches' attention kernels compute in f32 (simd/prefix_attention.h),
  // in the batch-invariant order only.
  if (IsCompactKvType(kv_type) && backend == Backend::kFast && precision != Precision::kF32) {
    return Fail(ErrorCode::kUnsupportedBackend, {{"", std::string(KvTypeName(kv_type))}},
                "an " + std::string(KvTypeName(kv_type)) +
                    " KV cache runs on the fast f32 engine or the reference engine");
  }
  if (IsCompactKvType(kv_type) && backend == Backend::kFast && !batch_invariant) {
    return Fail(ErrorCode::kUnsupportedBackend, {{"", std::string(KvTypeName(kv_type))}},
                "an " + std::string(KvTypeName(kv_type)) + " KV cache needs batch-invariant attention");
  }
  if (int8_activations && (backend != Backend::kFast || precision != Precision::kF32)) {
    return Fail(ErrorCode::kUnsupportedBackend, {{"", std::string("int8_activations")}},
                "int8 activations run on the fast f32 engine only");
  }
  if (bf16_activations && (backend != Backend::kFast || precision != Precision::kF32)) {
    return Fail(ErrorCode::kUnsupportedBackend, {{"", std::string("bf16_activations")}},
                "bf16 activations run on the fast f32 engine only");
  }
  if (threads > kMaxThreads) {
    return Fail(ErrorCode::kInvalidArgument, {},
                "at most " + std::to_string(kMaxThreads) + " threads, got " + std::to_string(threads));
  }
  if (max_rows_per_step == 0) {
    return Fail(ErrorCode::kInvalidArgument, {}, "max_rows_per_step must be at least 1");
  }
  return {};
}

}  // namespace kvrt
