// fuzz-seeds DIR: writes every fuzz target's seeds to DIR/<target>/seed-<i>, the seed corpus that
// `make fuzz` hands to each libFuzzer binary. The seeds come from the code (fuzz_targets.cpp), so they
// follow the file formats as they change.
#include <cstdio>
#include <exception>
#include <filesystem>
#include <fstream>

#include "fuzz/fuzz_targets.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s DIR\n", argv[0]);
    return 2;
  }
  try {
    for (const mt_fuzz::Target& t : mt_fuzz::targets()) {
      const std::filesystem::path dir = std::filesystem::path(argv[1]) / t.name;
      std::filesystem::create_directories(dir);
      const auto seeds = t.seeds();
      for (std::size_t i = 0; i < seeds.size(); ++i)
        std::ofstream(dir / ("seed-" + std::to_string(i)), std::ios::binary) << seeds[i];
      std::printf("%s: %zu seeds in %s\n", t.name, seeds.size(), dir.c_str());
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fuzz-seeds: error: %s\n", e.what());
    return 1;
  }
  return 0;
}
