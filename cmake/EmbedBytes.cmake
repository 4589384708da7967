# cmake -DINPUT=file -DOUTPUT=source.cc -P EmbedBytes.cmake
# Writes a C++ source defining kvrt::cli::EmbeddedCh35Checkpoint() over INPUT's bytes.
file(READ "${INPUT}" hex HEX)
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
file(WRITE "${OUTPUT}"
  "// Generated from ${INPUT} by cmake/EmbedBytes.cmake; do not edit.\n"
  "#include <cstdint>\n#include <span>\n"
  "namespace kvrt::cli {\n"
  "namespace { constexpr uint8_t kBytes[] = {${bytes}}; }\n"
  "std::span<const uint8_t> EmbeddedCh35Checkpoint() { return kBytes; }\n"
  "}  // namespace kvrt::cli\n")
