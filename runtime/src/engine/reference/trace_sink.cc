#include "engine/reference/trace_sink.h"

#include <algorithm>
#include <utility>

namespace kvrt::detail {

void TraceSink::EnterBlock(size_t layer) {
  if (enabled()) prefix_ = "blocks." + std::to_string(layer) + ".";
}

void TraceSink::LeaveBlocks() { prefix_.clear(); }

void TraceSink::Rows(const char* name, size_t batch, size_t rows, size_t width,
                     const double* values) {
  if (!enabled()) return;
  Add(name, {batch, rows, width}, std::vector<double>(values, values + batch * rows * width));
}

void TraceSink::Heads(const char* name, size_t batch, size_t rows, size_t heads, size_t head_width,
                      const double* values) {
  if (!enabled()) return;
  std::vector<double> gathered(batch * heads * rows * head_width);
  for (size_t b = 0; b < batch; ++b) {
    for (size_t r = 0; r < rows; ++r) {
      for (size_t h = 0; h < heads; ++h) {
        const double* source = values + ((b * rows + r) * heads + h) * head_width;
        std::copy_n(source, head_width,
                    gathered.data() + ((b * heads + h) * rows + r) * head_width);
      }
    }
  }
  Add(name, {batch, heads, rows, head_width}, std::move(gathered));
}

void TraceSink::Open(const char* name, std::initializer_list<size_t> shape, size_t count) {
  if (!enabled()) return;
  pending_ = {prefix_ + name, std::vector<size_t>(shape), std::vector<double>(count, 0.0)};
}

void TraceSink::Fill(size_t offset, const double* values, size_t count) {
  if (!enabled()) return;
  std::copy_n(values, count, pending_.values.data() + offset);
}

void TraceSink::Close() {
  if (!enabled()) return;
  trace_->stages.push_back(std::move(pending_));
  pending_ = {};
}

void TraceSink::Add(const char* name, std::vector<size_t> shape, std::vector<double> values) {
  trace_->stages.push_back({prefix_ + name, std::move(shape), std::move(values)});
}

}  // namespace kvrt::detail
