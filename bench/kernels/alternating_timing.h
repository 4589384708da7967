// Timing helpers shared by the kernel and engine benchmarks.
//
// Ratios on a shared machine (fast vs twin, 2 threads vs 1, a kernel vs its
// bandwidth or FMA probe) are timed side by side inside one row, each side's
// seconds summed over the row's iterations, the order of the two swapped every
// iteration: a neighbour's burst then lands on both sides of the ratio instead of
// on one of two rows run seconds apart.
#pragma once

#include <chrono>
#include <utility>

namespace kvrt::bench {

// Wall seconds fn() takes.
template <class Fn>
double SecondsOf(Fn&& fn) {
  const auto start = std::chrono::steady_clock::now();
  std::forward<Fn>(fn)();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// Runs two sides of a comparison, a then b on one call and b then a on the next.
class Alternation {
 public:
  template <class A, class B>
  void operator()(A&& a, B&& b) {
    if (a_first_) {
      a();
      b();
    } else {
      b();
      a();
    }
    a_first_ = !a_first_;
  }

 private:
  bool a_first_ = true;
};

}  // namespace kvrt::bench
