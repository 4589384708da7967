// DequantizedModel: the values a weight format gives the fast engine, in dense
// f64 nodes for the scalar reference engine.
#include <new>
#include <optional>
#include <string>

#include "weights/prepare_weights.h"
#include "weights/compressed_weight.h"
#include "weights/weight_plan.h"

namespace kvrt {

Result<DecoderModel> DequantizedModel(const DecoderModel& model, WeightFormat format) try {
  if (!IsKnownWeightFormat(format)) {
    return Fail(ErrorCode::kUnsupportedBackend, {{"", std::string("unknown")}},
                "weight format " + std::to_string(static_cast<int>(format)) + " is not available");
  }
  if (format == WeightFormat::kAsStored) return model;
  std::vector<ParameterPtr> nodes = model.parameters();  // gains stay shared
  for (const MatrixWeightFormat& plan : PlanWeightFormats(model, format)) {
    const Parameter& parameter = model.parameter(plan.parameter);
    std::optional<Buffer<double>> values = Buffer<double>::Allocate(parameter.element_count());
    if (!values) {
      return Fail(ErrorCode::kAllocationFailed, {{"elements", uint64_t{parameter.element_count()}}},
                  "could not allocate the dequantized values of " + parameter.name());
    }
    const bool table = plan.parameter == 0;  // the token table, packed as [D, V]
    if (Result<void> read = detail::QuantizedValues(parameter, table, plan, values->span()); !read) {
      return Fail(std::move(read.error()));
    }
    Result<ParameterPtr> node = Parameter::Create(parameter.name(), parameter.shape(), values->span());
    if (!node) return Fail(std::move(node.error()));
    nodes[plan.parameter] = std::move(*node);
  }
  return model.WithParameters(std::move(nodes));
} catch (const std::bad_alloc&) {
  return Fail(ErrorCode::kAllocationFailed, {}, "could not allocate the dequantized model");
}

}  // namespace kvrt
