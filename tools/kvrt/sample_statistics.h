// Summaries of a row's samples (run times, tokens/s), shared by `kvrt bench`'s
// rows and outputs and `kvrt bench-compare`'s reading of merged runs. Each is 0
// for no samples.
#pragma once

#include <span>

namespace kvrt::cli {

double Mean(std::span<const double> values);
// Sample standard deviation (n − 1 in the denominator); 0 for fewer than two values.
double SampleStddev(std::span<const double> values);
// The middle value, or the mean of the two middle values for an even count.
double Median(std::span<const double> values);

}  // namespace kvrt::cli
