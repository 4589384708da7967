// Where the reference forward's steps report their named activations.
//
// The steps call the sink after each stage; without a trace every call returns at
// once, so an untraced step (every session step) allocates nothing here and its
// arithmetic never waits on tracing. Stage names and layouts are those of
// fixtures/model/ch38_fixture_check.txt: blocks' stages are named
// "blocks.<layer>.<stage>", head tensors are [batch, heads, rows, head_width].
#pragma once

#include <cstddef>
#include <initializer_list>
#include <string>
#include <vector>

#include "engine/reference/complete_prefix.h"

namespace kvrt::detail {

class TraceSink {
 public:
  explicit TraceSink(ForwardTrace* trace) : trace_(trace) {}

  bool enabled() const { return trace_ != nullptr; }

  // Names reported from here on belong to block `layer`, until LeaveBlocks.
  void EnterBlock(size_t layer);
  void LeaveBlocks();

  // A stage whose values are computed only when tracing: `values()` returns them.
  template <class Values>
  void Record(const char* name, std::initializer_list<size_t> shape, Values&& values) {
    if (enabled()) Add(name, std::vector<size_t>(shape), values());
  }

  // The first batch·rows rows of width `width` at `values`, as [batch, rows, width].
  void Rows(const char* name, size_t batch, size_t rows, size_t width, const double* values);

  // Rows of `heads` heads of width `head_width` ([batch·rows, heads·head_width] at
  // `values`), regathered into the [batch, heads, rows, head_width] head layout.
  void Heads(const char* name, size_t batch, size_t rows, size_t heads, size_t head_width,
             const double* values);

  // A stage filled piece by piece while a step runs: Open sizes it with zeros,
  // Fill copies `count` values to `offset`, Close records it. A step that fails
  // in between never closes it, so like every other stage it is in the trace
  // only once it has been computed in full.
  void Open(const char* name, std::initializer_list<size_t> shape, size_t count);
  void Fill(size_t offset, const double* values, size_t count);
  void Close();

 private:
  void Add(const char* name, std::vector<size_t> shape, std::vector<double> values);

  ForwardTrace* trace_;
  std::string prefix_;           // "blocks.<layer>." inside a block, else empty
  ForwardTrace::Stage pending_;  // the open stage
};

}  // namespace kvrt::detail
