// One allocation for all of an engine's weight matrices, in the order a decode
// step reads them.
//
// Why: the matrices of a 42M or 110M model in a compressed format are 0.3-1.7 MB
// each, under a huge page, so in buffers of their own they sit on small pages,
// scattered, and a decode step streams them one parallel loop each. Read that way
// the same bytes stream markedly slower than from one huge-page buffer (figures in
// docs/performance/design_measurements.md). In one arena the matrices lie back to
// back on huge pages, so a thread that ends one matrix's stream continues into the
// next one's bytes.
#pragma once

#include "weights/engine_weights.h"

namespace kvrt::detail {

// Moves every matrix `weights` owns (compressed panels or T panels; not the ones
// aliasing a parameter's panels) into `weights.arena`: the blocks' matrices in
// step order, then the untied head and the token table. Each view is re-pointed,
// each separate buffer released once copied, so the peak is the arena plus one
// matrix. The bytes and every view's shape stay the same, so the kernels compute
// the same bits. Where the arena cannot be allocated the matrices keep their own
// buffers: the same results, only slower.
template <class T>
void GatherIntoArena(EngineWeights<T>& weights);

}  // namespace kvrt::detail
