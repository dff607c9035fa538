#pragma once
/// \file save_file_checks.h
/// How a resume holds one file of a save to what the save's manifest recorded, for both kinds of save
/// (single-file: runtime/checkpoint.cpp, sharded: runtime/sharded_checkpoint.cpp), so that both say the
/// same of the same fault. Each problem is one std::runtime_error
/// "cannot resume from '<save>': its <role> '<file>' ..." (role: "model file", "optimizer state", "shard").
#include <string>

#include "minitorch/safetensors.h"
#include "runtime/checkpoint_manifest.h"

namespace minitorch::runtime {

/// Throws std::runtime_error "cannot resume from '<save>': <what>".
[[noreturn]] void resume_fail(const std::string& save, const std::string& what);

/// `file` exists with the size `want` records: a missing one is "... is missing; the save is
/// incomplete" + `missing_hint`, another size "... is truncated or was replaced".
void check_file_size(const std::string& save, const std::string& file, const ManifestFile& want, const std::string& role,
                     const std::string& missing_hint = "");

/// `file`'s bytes still have the FNV-1a 64 checksum `want` records.
void check_file_checksum(const std::string& save, const std::string& file, const ManifestFile& want,
                         const std::string& role);

/// The manifest's facts that `f` carries in its metadata (`manifest_facts`) agree with `manifest`, so an
/// edited manifest field is refused naming it. Saves from before the facts carry none: nothing to check.
void check_file_facts(const std::string& save, const SafetensorsFile& f, const CheckpointManifest& manifest,
                      const std::string& role);
void check_file_facts(const std::string& save, const SafetensorsFile& f, const ShardedManifest& manifest,
                      const std::string& role);

}  // namespace minitorch::runtime
