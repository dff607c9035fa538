// libFuzzer entry of the `frames` target (tests/fuzz/fuzz_targets.cpp): build-fuzz/bin/fuzz-frames,
// run by `make fuzz`.
#include "fuzz/fuzz_targets.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return mt_fuzz::libfuzzer_one_input("frames", data, size);
}
