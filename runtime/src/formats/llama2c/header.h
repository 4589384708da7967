// The 28-byte llama2.c checkpoint header: seven little-endian int32.
#pragma once

#include <array>
#include <cstdint>

#include "formats/llama2c/llama2c.h"

namespace kvrt::llama2c {

Llama2cHeader DecodeHeader(const std::array<uint8_t, kLlama2cHeaderBytes>& bytes);
std::array<uint8_t, kLlama2cHeaderBytes> EncodeHeader(const Llama2cHeader& header);

}  // namespace kvrt::llama2c
