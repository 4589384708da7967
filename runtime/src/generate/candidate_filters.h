// The samplers that drop candidates by their temperature-1 probabilities
// (docs/sampling.md §4–§6): typical-p, top-p and min-p. Each takes the candidate
// ids in rank order, keeps at least one and returns how many remain, compacted at
// the front in rank order. They read the shaped logits `x` (by id) and write only
// into the scratch buffers they are given (at least `count` entries each).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace kvrt::sampling {

// w[j] = 1 for the first candidate and exp(x[c_j] − x[c_0]) for the others.
void WeighAtTemperatureOne(std::span<const double> x, const uint32_t* candidates, size_t count,
                           double* w);

// q[j] = w[j] / W in place, W the Kahan sum of w in rank order (W ≥ 1: w[0] = 1).
void NormalizeInRankOrder(double* w, size_t count);

// Locally typical set: candidates by |surprisal − entropy| (ties: rank order),
// the shortest such prefix whose Kahan-summed probability exceeds typical_p.
size_t KeepTypical(std::span<const double> x, uint32_t* candidates, size_t count, double typical_p,
                   double* q, double* distance, uint32_t* by_distance);

// Nucleus: the shortest rank-order prefix whose Kahan-summed probability reaches top_p.
size_t KeepTopP(std::span<const double> x, uint32_t* candidates, size_t count, double top_p, double* q);

// The candidates whose temperature-1 weight (probability over the largest one's)
// is at least min_p.
size_t KeepMinP(std::span<const double> x, uint32_t* candidates, size_t count, double min_p, double* w);

}  // namespace kvrt::sampling
