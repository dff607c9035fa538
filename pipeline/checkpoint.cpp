// Saving and resuming a pipeline run (engine.h: PipelineEngine::save, resume). A pipeline's checkpoint is a
// sharded one (runtime/sharded_checkpoint.h) with one shard per rank of the data × pipeline grid; reading it
// puts the whole model back together, so it resumes on any grid and consolidates into one nanoGPT file.
#include "pipeline/engine.h"

#include "runtime/save_and_resume.h"

namespace minitorch::pipeline {

void PipelineEngine::save(const std::string& dir, const data::Tokenizer& tokenizer, const std::string& run_id) const {
  const zero::GradientStrategy& s = engine_->strategy();
  // ZeRO-1 over the stage's replicas: each writes its pieces. DDP (or one replica): every replica holds the
  // stage whole, and only the first writes it, so every element is in exactly one shard.
  const bool writes = s.shards_optimizer_state() || grid_.dp_rank == 0;
  const nn::NamedTensors mine = writes ? runtime::shard_tensors(s, trained_) : nn::NamedTensors{};
  runtime::save_shards(dir, *engine_, tokenizer, run_id, world_, mine, stages());
}

runtime::ResumeInfo PipelineEngine::resume(const std::string& path) {
  runtime::ResumeInfo info = runtime::resume_from(path, *engine_);
  {  // the last stage's copy of the tied weight: the first stage's, just loaded (not a step's traffic)
    dist::NoRecordScope quiet(*grid_.pipe);
    send_tied_weight();
  }
  tied_bytes_ = 0;
  return info;
}

}  // namespace minitorch::pipeline
