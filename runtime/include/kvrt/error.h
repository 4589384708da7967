// Typed errors for every public kvrt operation.
//
// Errors are values: every fallible call returns Result<T> = std::expected<T, Error>
// and no exception escapes the public API. An Error carries
//   * a chain of variant codes, outermost first, named exactly like the reference
//     crate's Rust enum variants (e.g. {AdamW, InvalidLearningRate} for the Rust
//     value `AdamW(InvalidLearningRate { value: 0.0 })`);
//   * the payload fields of every level of that chain;
//   * the reference's Display message (where the reference defines one), as one
//     line of at most 1024 bytes: control characters and bytes that are not UTF-8
//     in it (strings a file supplied) are escaped (\n, \0, \x1b, \u{85}), and a
//     longer message keeps its head and tail around "…". Payload fields keep the
//     raw values.
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

// Every variant name the runtime reports, in one list: the enum and the name
// table (ErrorName) are both generated from it, so they cannot drift apart. Names
// shared by several reference enums (for example `Full`, `EmptyPrompt`,
// `AllocationFailed`) appear once. Append new codes at the end of their group.
#define KVRT_ERROR_CODES(X) \
  /* Model configuration (spec/model.md §1.2) and model construction. */ \
  X(EmptyVocabulary) \
  X(ZeroModelWidth) \
  X(ZeroHeadCount) \
  X(ModelWidthNotDivisible) \
  X(OddHeadWidth) \
  X(ZeroFeedForwardWidth) \
  X(ZeroPositionCapacity) \
  X(InvalidRopeBase) \
  X(InvalidRmsEpsilon) \
  X(ZeroKeyValueHeads) \
  X(HeadsNotDivisibleByKeyValueHeads) \
  X(NonFiniteTableValue) \
  X(SizeOverflow) \
  /* Rebuilding a model from named parameters (spec/checkpoint.md §9 step 11). */ \
  X(ParameterCountMismatch) \
  X(ParameterNameMismatch) \
  X(ParameterShapeMismatch) \
  X(EmbeddingVocabularyMismatch) \
  X(EmbeddingWidthMismatch) \
  X(BlockModelWidthMismatch) \
  X(BlockFeedForwardWidthMismatch) \
  X(FinalNormWidthMismatch) \
  X(InvalidNameCharacter) \
  X(EmptyNameSegment) \
  X(NonFiniteLeaf) \
  X(Initialization) \
  X(Autodiff) \
  /* Forward-pass input (spec/model.md §1.3) and numeric failures. */ \
  X(TokenRank) \
  X(EmptyBatch) \
  X(EmptyTokens) \
  X(ContextLengthExceeded) \
  X(TokenCountMismatch) \
  X(TokenIdOutOfBounds) \
  X(ZeroEnergyRow) \
  X(NonFiniteActivation) \
  X(Embedding) \
  X(Block) \
  /* Checkpoint reader (spec/checkpoint.md §9). */ \
  X(Io) \
  X(Truncated) \
  X(InvalidMagic) \
  X(UnsupportedVersion) \
  X(UnsupportedEndianness) \
  X(FileExtent) \
  X(ChecksumMismatch) \
  X(UnsupportedTokenizerLayout) \
  X(UnsupportedRngAlgorithm) \
  X(UnknownTokenizerKind) \
  X(AdamW) \
  X(NonCanonical) \
  X(InvalidUtf8) \
  X(UnknownTensorRole) \
  X(UnknownDType) \
  X(Layout) \
  X(Allocation) \
  X(Tokenizer) \
  X(Bpe) \
  X(VocabularyMismatch) \
  X(Model) \
  X(AdamWState) \
  X(StepMismatch) \
  X(OptimizerNames) \
  X(OptimizerShape) \
  /* AdamW configuration, groups and persisted state. */ \
  X(InvalidLearningRate) \
  X(InvalidBeta1) \
  X(InvalidBeta2) \
  X(InvalidEpsilon) \
  X(InvalidWeightDecay) \
  X(InvalidDecayProduct) \
  X(EmptyGroupedParameterName) \
  X(DuplicateGroupedParameter) \
  X(EmptyParameterGroups) \
  X(ParameterInMultipleGroups) \
  X(NonFiniteMoment) \
  X(NegativeSecondMoment) \
  X(InvalidBetaPower) \
  X(StatePresence) \
  X(DuplicateParameterName) \
  X(ParameterGroupsMismatch) \
  /* Tokenizers (spec/checkpoint.md §11). */ \
  X(UnknownMergeOperand) \
  X(DuplicateMergePair) \
  X(ControlTokenInContent) \
  X(UnknownToken) \
  X(DocumentTooShort) \
  X(ExpectedBos) \
  X(ExpectedEos) \
  X(InteriorControlToken) \
  X(LayoutOverflow) \
  /* One layer's KV cache and incremental attention (spec/kv-cache.md §1.8, §2.4). */ \
  X(ZeroBatchSize) \
  X(ZeroCapacity) \
  X(CapacityExceedsPositions) \
  X(ElementCountOverflow) \
  X(AllocationFailed) \
  X(Full) \
  X(KeyShapeMismatch) \
  X(ValueShapeMismatch) \
  X(NonFiniteKey) \
  X(NonFiniteValue) \
  X(CacheLayerMismatch) \
  X(CacheLayerRevisionMismatch) \
  X(CacheModelWidthMismatch) \
  X(CacheHeadCountMismatch) \
  X(CacheHeadWidthMismatch) \
  X(CacheRopeMismatch) \
  X(Probability) \
  X(QkvProjection) \
  X(OutputProjection) \
  X(PositiveInfinityLogit) \
  /* Model-wide cache and session (spec/kv-cache.md §3.10). */ \
  X(LayerAllocationFailed) \
  X(ParameterAllocationFailed) \
  X(LayerCache) \
  X(ModelConfigMismatch) \
  X(ModelParameterCountMismatch) \
  X(ModelParameterMismatch) \
  X(ModelParameterRevisionMismatch) \
  X(LayerCountMismatch) \
  X(LayerLengthInvariant) \
  X(LayerBatchSizeMismatch) \
  X(LayerCapacityMismatch) \
  X(IncrementalAttention) \
  X(EmptyPrompt) \
  X(PrefillRequiresEmpty) \
  X(PromptTooLong) \
  X(PromptTokenOutOfBounds) \
  X(DecodeRequiresPrefill) \
  X(DecodeTokenOutOfBounds) \
  X(PreparedCacheChanged) \
  X(WorkOverflow) \
  X(AttentionNorm) \
  X(AttentionResidual) \
  X(FeedForwardNorm) \
  X(FeedForward) \
  X(FeedForwardResidual) \
  X(FinalNorm) \
  X(CacheAlreadyBound) \
  X(BatchShapeMismatch) \
  /* Parameter updates (the in-process equivalent of an optimiser step, §5). */ \
  X(ParameterValueBorrowed) \
  X(ParameterRevisionOverflow) \
  X(UnknownParameter) \
  X(NonFiniteParameter) \
  /* Sampling and generation (spec/sampling.md §6). */ \
  X(EmptyLogits) \
  X(VocabularyTooLarge) \
  X(NonFiniteLogit) \
  X(InvalidTemperature) \
  X(InvalidTopK) \
  X(InvalidProbabilitySum) \
  X(EosTokenOutOfBounds) \
  X(Sampling) \
  X(LogitCountMismatch) \
  X(Cache) \
  /* Engine selection and command-line use. */ \
  X(UnsupportedBackend) \
  X(InvalidArgument) \
  X(InvariantViolation) \
  /* llama2.c checkpoints and tokenizer files. */ \
  X(InvalidHeaderValue) \
  X(InconsistentHeader) \
  X(TrailingBytes) \
  X(InvalidTokenLength) \
  X(NonFiniteScore) \
  X(MissingByteTokens) \
  /* Model files of any format (kvrt/load_model.h). */ \
  X(UnknownModelFormat) \
  /* GGUF tokenizers. */ \
  X(UnsupportedTokenizerModel) \
  X(UnsupportedPreTokenizer) \
  X(InvalidTokenType) \
  X(SpecialTokenOutOfRange) \
  X(MalformedMerge) \
  X(InvalidByteToken) \
  /* GGUF files (formats/gguf): the container, its metadata and the llama model in it. */ \
  X(NotRegularFile) \
  X(CountExceedsFile) \
  X(UnknownValueType) \
  X(NestingTooDeep) \
  X(InvalidBool) \
  X(DuplicateKey) \
  X(InvalidAlignment) \
  X(TooManyDimensions) \
  X(InvalidTensorShape) \
  X(DuplicateTensor) \
  X(MisalignedTensor) \
  X(OverlappingTensors) \
  X(UnsupportedTensorType) \
  X(MissingKey) \
  X(KeyTypeMismatch) \
  X(KeyValueOutOfRange) \
  X(UnsupportedArchitecture) \
  X(UnsupportedRopeScaling) \
  X(UnsupportedSlidingWindow) \
  X(PartialRotaryDimension) \
  X(MissingTensor) \
  X(UnexpectedTensor) \
  X(TensorShapeMismatch) \
  /* Sequence slots, after every earlier code so that their numbers are the C API's. */ \
  X(SlotOutOfRange) \
  X(DuplicateSlot) \
  X(EmptyStep) \
  X(StepTooLarge) \
  X(TruncateBeyondLength) \
  X(ForkOntoItself) \
  X(SlotRequest) \
  /* GGUF keys kvrt cannot honour: a RoPE scaling other than linear, a key or */ \
  /* value width that contradicts the head width, experts. */ \
  X(InvalidRopeScale) \
  X(HeadWidthMismatch) \
  X(UnsupportedExperts) \
  /* Chat templates (kvrt/chat.h). */ \
  X(UnsupportedChatTemplate) \
  /* The C API: a second call entering one session while another is inside it. */ \
  X(ConcurrentUse) \
  /* The sampler set and generation controls (kvrt/sampling.h, kvrt/generation.h). */ \
  X(InvalidSamplerSetting) \
  X(LogitBiasOutOfBounds) \
  X(InvalidStopString) \

enum class ErrorCode : uint16_t {
#define KVRT_ERROR_ENUMERATOR(name) k##name,
  KVRT_ERROR_CODES(KVRT_ERROR_ENUMERATOR)
#undef KVRT_ERROR_ENUMERATOR
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
