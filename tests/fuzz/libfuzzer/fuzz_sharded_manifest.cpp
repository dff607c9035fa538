// libFuzzer entry of the `sharded_manifest` target (tests/fuzz/fuzz_targets.cpp): build-fuzz/bin/fuzz-sharded_manifest,
// run by `make fuzz`.
#include "fuzz/fuzz_targets.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return mt_fuzz::libfuzzer_one_input("sharded_manifest", data, size);
}
