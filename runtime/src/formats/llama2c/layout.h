// The order of the tensors in a llama2.c checkpoint, shared by the reader and the
// writer so both walk the file the same way.
#pragma once

#include <cstddef>
#include <vector>

#include "kvrt/config.h"

namespace kvrt::llama2c {

enum class SectionKind {
  kMatrix,      // a weight matrix; stored [rows, columns] row-major
  kGain,        // an RMSNorm gain vector: rows = 1
  kRopeTables,  // freq_cis_real then freq_cis_imag: unused by kvrt
};

// One contiguous run of float32 values in the file.
struct Section {
  SectionKind kind = SectionKind::kMatrix;
  size_t parameter = 0;  // index in DecoderModel::parameters() (matrices, gains)
  size_t rows = 0;
  size_t columns = 0;
  // Stored element (r, c) is element (c, r) of the kvrt parameter: llama2.c keeps
  // [out, in] where kvrt keeps [in, out]. The token table is stored as kvrt
  // shapes it, [V, D].
  bool transposed = true;
};

// Every section in file order. The config must have passed Llama2cFileBytes,
// so no product overflows.
std::vector<Section> FileSections(const ModelConfig& config);

}  // namespace kvrt::llama2c
