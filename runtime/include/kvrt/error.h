// Typed errors for every public kvrt operation.
//
// Errors are values: every fallible call returns Result<T> = std::expected<T, Error>
// and no exception escapes the public API. An Error carries
//   * a chain of variant codes, outermost first, named exactly like the reference
//     crate's Rust enum variants (e.g. {AdamW, InvalidLearningRate} for the Rust
//     value `AdamW(InvalidLearningRate { value: 0.0 })`);
//   * the payload fields of every level of that chain;
//   * the reference's Display message (where the reference defines one).
// Debug() renders the chain the way Rust's derived Debug does, so tests can compare
// variant and payload against the reference's recorded `{:?}` strings exactly.
#pragma once

#include <cstdint>
#include <expected>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace kvrt {

// Every variant name the runtime reports. Names shared by several reference enums
// (for example `Full`, `EmptyPrompt`, `AllocationFailed`) appear once.
enum class ErrorCode : uint16_t {
  // Model configuration (spec/model.md §1.2) and model construction.
  kEmptyVocabulary,
  kZeroModelWidth,
  kZeroHeadCount,
  kModelWidthNotDivisible,
  kOddHeadWidth,
  kZeroFeedForwardWidth,
  kZeroPositionCapacity,
  kInvalidRopeBase,
  kInvalidRmsEpsilon,
  kZeroKeyValueHeads,
  kHeadsNotDivisibleByKeyValueHeads,
  kNonFiniteTableValue,
  kSizeOverflow,
  // Rebuilding a model from named parameters (spec/checkpoint.md §9 step 11).
  kParameterCountMismatch,
  kParameterNameMismatch,
  kParameterShapeMismatch,
  kEmbeddingVocabularyMismatch,
  kEmbeddingWidthMismatch,
  kBlockModelWidthMismatch,
  kBlockFeedForwardWidthMismatch,
  kFinalNormWidthMismatch,
  kInvalidNameCharacter,
  kEmptyNameSegment,
  kNonFiniteLeaf,
  kInitialization,
  kAutodiff,
  // Forward-pass input (spec/model.md §1.3) and numeric failures.
  kTokenRank,
  kEmptyBatch,
  kEmptyTokens,
  kContextLengthExceeded,
  kTokenCountMismatch,
  kTokenIdOutOfBounds,
  kZeroEnergyRow,
  kNonFiniteActivation,
  kEmbedding,
  kBlock,
  // Checkpoint reader (spec/checkpoint.md §9).
  kIo,
  kTruncated,
  kInvalidMagic,
  kUnsupportedVersion,
  kUnsupportedEndianness,
  kFileExtent,
  kChecksumMismatch,
  kUnsupportedTokenizerLayout,
  kUnsupportedRngAlgorithm,
  kUnknownTokenizerKind,
  kAdamW,
  kNonCanonical,
  kInvalidUtf8,
  kUnknownTensorRole,
  kUnknownDType,
  kLayout,
  kAllocation,
  kTokenizer,
  kBpe,
  kVocabularyMismatch,
  kModel,
  kAdamWState,
  kStepMismatch,
  kOptimizerNames,
  kOptimizerShape,
  // AdamW configuration, groups and persisted state.
  kInvalidLearningRate,
  kInvalidBeta1,
  kInvalidBeta2,
  kInvalidEpsilon,
  kInvalidWeightDecay,
  kInvalidDecayProduct,
  kEmptyGroupedParameterName,
  kDuplicateGroupedParameter,
  kEmptyParameterGroups,
  kParameterInMultipleGroups,
  kNonFiniteMoment,
  kNegativeSecondMoment,
  kInvalidBetaPower,
  kStatePresence,
  kDuplicateParameterName,
  kParameterGroupsMismatch,
  // Tokenizers (spec/checkpoint.md §11).
  kUnknownMergeOperand,
  kDuplicateMergePair,
  kControlTokenInContent,
  kUnknownToken,
  kDocumentTooShort,
  kExpectedBos,
  kExpectedEos,
  kInteriorControlToken,
  kLayoutOverflow,
  // One layer's KV cache and incremental attention (spec/kv-cache.md §1.8, §2.4).
  kZeroBatchSize,
  kZeroCapacity,
  kCapacityExceedsPositions,
  kElementCountOverflow,
  kAllocationFailed,
  kFull,
  kKeyShapeMismatch,
  kValueShapeMismatch,
  kNonFiniteKey,
  kNonFiniteValue,
  kCacheLayerMismatch,
  kCacheLayerRevisionMismatch,
  kCacheModelWidthMismatch,
  kCacheHeadCountMismatch,
  kCacheHeadWidthMismatch,
  kCacheRopeMismatch,
  kProbability,
  kQkvProjection,
  kOutputProjection,
  kPositiveInfinityLogit,
  // Model-wide cache and session (spec/kv-cache.md §3.10).
  kLayerAllocationFailed,
  kParameterAllocationFailed,
  kLayerCache,
  kModelConfigMismatch,
  kModelParameterCountMismatch,
  kModelParameterMismatch,
  kModelParameterRevisionMismatch,
  kLayerCountMismatch,
  kLayerLengthInvariant,
  kLayerBatchSizeMismatch,
  kLayerCapacityMismatch,
  kIncrementalAttention,
  kEmptyPrompt,
  kPrefillRequiresEmpty,
  kPromptTooLong,
  kPromptTokenOutOfBounds,
  kDecodeRequiresPrefill,
  kDecodeTokenOutOfBounds,
  kPreparedCacheChanged,
  kWorkOverflow,
  kAttentionNorm,
  kAttentionResidual,
  kFeedForwardNorm,
  kFeedForward,
  kFeedForwardResidual,
  kFinalNorm,
  kCacheAlreadyBound,
  kBatchShapeMismatch,
  // Parameter updates (the in-process equivalent of an optimiser step, §5).
  kParameterValueBorrowed,
  kParameterRevisionOverflow,
  kUnknownParameter,
  kNonFiniteParameter,
  // Sampling and generation (spec/sampling.md §6).
  kEmptyLogits,
  kVocabularyTooLarge,
  kNonFiniteLogit,
  kInvalidTemperature,
  kInvalidTopK,
  kInvalidProbabilitySum,
  kEosTokenOutOfBounds,
  kSampling,
  kLogitCountMismatch,
  kCache,
  // Engine selection and command-line use.
  kUnsupportedBackend,
  kInvalidArgument,
  kInvariantViolation,
  // llama2.c checkpoints and tokenizer files.
  kInvalidHeaderValue,
  kInconsistentHeader,
  kTrailingBytes,
  kInvalidTokenLength,
  kNonFiniteScore,
  kMissingByteTokens,
  // Model files of any format (kvrt/load_model.h).
  kUnknownModelFormat,
  // GGUF tokenizers.
  kUnsupportedTokenizerModel,
  kUnsupportedPreTokenizer,
  kInvalidTokenType,
  kSpecialTokenOutOfRange,
  kMalformedMerge,
  kInvalidByteToken,
  // GGUF files (formats/gguf): the container, its metadata and the llama model in it.
  kNotRegularFile,  // the path names something other than a regular file
  kCountExceedsFile,  // a declared count or length needs more bytes than remain
  kUnknownValueType,  // a metadata value type id outside the GGUF table
  kNestingTooDeep,  // arrays of arrays nested deeper than the reader allows
  kInvalidBool,  // a bool byte other than 0 or 1
  kDuplicateKey,
  kInvalidAlignment,  // general.alignment zero, not a power of two, or not u32
  kTooManyDimensions,  // tensor n_dims of 0 or above 4
  kInvalidTensorShape,  // a dimension that is zero, negative or not whole blocks
  kDuplicateTensor,
  kMisalignedTensor,
  kOverlappingTensors,
  kUnsupportedTensorType,  // a ggml type kvrt knows by name but cannot dequantize
  kMissingKey,
  kKeyTypeMismatch,
  kKeyValueOutOfRange,  // an integer value that does not fit the requested type
  kUnsupportedArchitecture,
  kUnsupportedRopeScaling,
  kUnsupportedSlidingWindow,
  kPartialRotaryDimension,
  kMissingTensor,
  kUnexpectedTensor,
  kTensorShapeMismatch,

  kCount  // number of codes; not a variant
};

// The reference variant name of `code` (e.g. "ChecksumMismatch").
std::string_view ErrorName(ErrorCode code);

// A payload value rendered the way Rust's Debug renders the field's type.
struct Identifier {  // a bare enum-like value such as `Parameter` or `Scores`
  std::string name;
  bool operator==(const Identifier&) const = default;
};
using FieldValue = std::variant<uint64_t, int64_t, double, bool, std::string, Identifier,
                                std::vector<std::string>, std::optional<uint64_t>>;

struct ErrorField {
  const char* name;  // empty for a tuple payload such as Layout("...")
  FieldValue value;
};

// One variant in the chain, with its own payload.
struct ErrorLevel {
  ErrorCode code;
  std::vector<ErrorField> fields;
};

class Error {
 public:
  Error(ErrorCode code, std::vector<ErrorField> fields, std::string message);

  // Outermost variant: the one a CLI prints as `error: <VariantName>: <message>`.
  ErrorCode code() const { return levels_.front().code; }
  ErrorCode innermost() const { return levels_.back().code; }
  std::string_view name() const { return ErrorName(code()); }
  const std::vector<ErrorLevel>& levels() const { return levels_; }
  const std::string& message() const { return message_; }

  // True when `code` appears anywhere in the chain.
  bool Has(ErrorCode code) const;
  // The first field called `field_name`, searched from the innermost level outwards.
  const FieldValue* Field(std::string_view field_name) const;
  std::optional<uint64_t> U64(std::string_view field_name) const;

  // Rust-Debug rendering of the whole chain, e.g. `Sampling(InvalidTopK { top_k: 0,
  // vocabulary_size: 5 })`.
  std::string Debug() const;

  // Wraps this error as the source of a new outer variant. The outer variant's own
  // payload precedes the source; `message` replaces the Display text when non-empty.
  Error Wrap(ErrorCode outer, std::vector<ErrorField> fields = {}, std::string message = {}) &&;

 private:
  std::vector<ErrorLevel> levels_;
  std::string message_;
};

template <class T>
using Result = std::expected<T, Error>;

// Shorthand for `return Fail(...)` in functions returning Result<T>.
inline std::unexpected<Error> Fail(ErrorCode code, std::vector<ErrorField> fields,
                                   std::string message) {
  return std::unexpected<Error>(Error(code, std::move(fields), std::move(message)));
}
inline std::unexpected<Error> Fail(Error error) { return std::unexpected<Error>(std::move(error)); }

}  // namespace kvrt
