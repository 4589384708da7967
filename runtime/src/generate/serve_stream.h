// The streaming form of ServeGenerations over the library's model (kvrt/model.h's
// ServeGenerationStream calls it; kvrt/generation.h has its types): requests are pulled
// from a source one at a time and results handed out in request order as soon as
// they are known, so a run over any number of requests holds only what its slots
// are working on. `kvrt batch` serves its requests file through it;
// ServeGenerations is the same driver over a span.
//
// Memory is bounded by the options, never by the number of requests: one request
// waiting for a slot, the requests in the slots (each borrowing its slot's
// sampler buffers, allocated once per slot), and results that finished before an
// earlier request and wait to be delivered in order. While max_held_results of
// those wait, no further request is admitted (the earliest undelivered request
// is always in a slot, so the wait ends); one step can add at most `slots` more.
#pragma once

#include "kvrt/error.h"
#include "kvrt/generation.h"
#include "model/decoder_model.h"

namespace kvrt {

// Serves every request of `source` as ServeGenerations does (the same admission,
// steps and per-request results). Errors of the whole run: the cache or session
// cannot be built (Cache(...)), AllocationFailed, or the source's or the
// callback's error; results already delivered stay delivered.
Result<void> ServeGenerationStream(const DecoderModel& model, GenerationRequestSource& source,
                                   const ServedCallback& deliver, const StreamOptions& options);

}  // namespace kvrt
