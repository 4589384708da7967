// One weight matrix converted to its planned format (kvrt/weight_format.h): the
// kernels' compressed panels for the fast f32 engine, or the dequantized values
// for the engines that compute on them in f64 (the reference oracle and fast f64).
#pragma once

#include <span>

#include "core/buffer.h"
#include "kvrt/error.h"
#include "model/parameter.h"
#include "kvrt/simd/compressed_matrix.h"
#include "kvrt/weight_format.h"

namespace kvrt::detail {

struct CompressedWeight {
  simd::CompressedMatrixView view;
  Buffer<uint8_t> owned;  // the packed panels `view` reads
};

// `parameter` as the [K, N] matrix of x·W (transposed: a [V, D] table as [D, V])
// in plan.effective, which must be a compressed format: repacked losslessly from
// the file's bytes when plan.as_stored, else quantized from the f32-rounded values.
Result<CompressedWeight> PackCompressedWeight(const Parameter& parameter, bool transposed,
                                              const MatrixWeightFormat& plan);

// The parameter's row-major values (its own shape) as the fast f32 engine sees
// them under `plan`: rounded to f32, or dequantized from the compressed form.
// `out` holds parameter.element_count() values.
Result<void> QuantizedValues(const Parameter& parameter, bool transposed,
                             const MatrixWeightFormat& plan, std::span<double> out);

}  // namespace kvrt::detail
