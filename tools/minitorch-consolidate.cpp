// minitorch-consolidate CKPT_DIR OUT.safetensors
// Puts a sharded checkpoint (ZeRO stages 1-3 on several ranks: CKPT_DIR/shard-*.safetensors and
// manifest.json, runtime/sharded_checkpoint.h) back together into one f32 model file with nanoGPT's
// names: what minitorch-eval, minitorch-sample and a PyTorch nanoGPT load. Every shard is checked
// (manifest, sizes, checksums, run, every element present once) before anything is written; the
// output is written atomically. DeepSpeed's zero_to_fp32.py does the same for its checkpoints.
// Exit status: 0 done, 2 usage error, 1 a bad or incomplete checkpoint.
#include <cstdio>

#include "cli_common.h"
#include "runtime/save_and_resume.h"
#include "runtime/save_target.h"

using namespace minitorch;

int main(int argc, char** argv) {
  cli::Parser parser{"minitorch-consolidate: one f32 model file from a sharded checkpoint"};
  std::string dir, out;
  parser.option("CKPT_DIR", dir, "sharded checkpoint directory written by minitorch-train (stage >= 1, N > 1)")
      ->required();
  parser.option("OUT", out, "the model file to write (safetensors)")->required();
  return tools::run_tool(parser, argc, argv, [&] {
    namespace fs = std::filesystem;
    const bool interrupted = fs::is_directory(runtime::partial_path(dir)) || fs::is_directory(runtime::old_path(dir));
    if (!runtime::is_sharded_checkpoint(dir) && !interrupted)
      throw std::runtime_error("'" + dir + "' is not a sharded checkpoint directory" +
                               (fs::exists(dir) ? " (a single-file checkpoint is already whole: use it as it is)"
                                                : " (no such directory)"));
    tools::ensure_writable(out, "OUT");
    // After an interrupted save: the complete save beside it (runtime/save_target.h), named.
    const runtime::LocatedSave where = runtime::locate_save(dir);
    if (!where.note.empty()) tools::warn(where.note);
    const runtime::ShardedManifest m = runtime::check_complete_sharded(where.path);
    const std::int64_t n = runtime::consolidate(where.path, out);
    const std::string grid = m.pipeline_stages > 1 ? " (" + std::to_string(m.data_parallel_size) + " data-parallel x " +
                                                         std::to_string(m.pipeline_stages) + " pipeline stages)"
                                                   : "";
    std::printf("consolidated %s (stage %d, %d shards%s, step %lld) -> %s: %lld parameters, f32\n", where.path.c_str(), m.zero_stage,
                m.ranks(), grid.c_str(), static_cast<long long>(m.step), out.c_str(), static_cast<long long>(n));
  });
}
