// The weights an engine reads, made ahead of time, and the reference oracle's
// model for a weight format.
#pragma once

#include "kvrt/engine_options.h"
#include "kvrt/error.h"
#include "model/decoder_model.h"
#include "kvrt/weight_format.h"

namespace kvrt {

// The weights the fast f32 engine computes on with weight format `format`, as
// exact f64 values in a new model: every matrix (token table, the seven per
// block, an untied head) rounded to f32 or quantized and dequantized exactly as
// the fast engine packs it, fallbacks included; gains are the same nodes. The
// scalar f64 reference engine on this model is the oracle of the compressed
// kernels (EngineOptions{kReference, ..., weights = format} binds it). For
// kAsStored this is a handle on `model`: its values are already exact (the
// spec's f64 values, or a GGUF tensor's exact dequantization).
Result<DecoderModel> DequantizedModel(const DecoderModel& model, WeightFormat format);

// Packs or converts, now, the weights an engine with these options reads (the
// fast engine's panels in engine.weights' format, or the reference engine's
// dequantized model), which the first session would otherwise build. Sessions
// bound later with the same backend, precision, format and int8 choice reuse them
// while every parameter keeps its revision, so a caller timing its first prefill
// does not time a conversion.
Result<void> PrepareWeights(const DecoderModel& model, const EngineOptions& engine);

}  // namespace kvrt
